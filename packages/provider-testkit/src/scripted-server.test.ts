import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ScriptedServer } from './scripted-server.js';

const server = new ScriptedServer();

beforeAll(async () => {
  await server.start();
});
afterAll(async () => {
  await server.stop();
});
beforeEach(() => {
  server.reset();
});

describe('ScriptedServer', () => {
  it('serves queued responses in order and records method, path, headers and JSON body', async () => {
    server.enqueue(
      { status: 201, headers: { 'x-one': '1' }, body: 'first' },
      { status: 429, headers: { 'retry-after': '3' }, body: '{"error":"slow down"}' },
    );
    const first = await fetch(`${server.url}/v1/things?x=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
      body: JSON.stringify({ a: 1 }),
    });
    expect(first.status).toBe(201);
    expect(first.headers.get('x-one')).toBe('1');
    expect(await first.text()).toBe('first');
    const second = await fetch(server.url);
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('3');
    expect(await second.json()).toEqual({ error: 'slow down' });

    expect(server.requests.map((request) => [request.method, request.path])).toEqual([
      ['POST', '/v1/things?x=1'],
      ['GET', '/'],
    ]);
    expect(server.requests[0]!.headers.authorization).toBe('Bearer k');
    expect(server.requests[0]!.body).toEqual({ a: 1 });
    expect(server.requests[0]!.rawBody).toBe('{"a":1}');
    expect(server.requests[1]!.body).toBeUndefined();
    expect(await server.requests[0]!.outcome).toBe('completed');
    expect(server.pending).toBe(0);
  });

  it('writes body pieces one by one, with pauses', async () => {
    server.enqueue({ status: 200, body: ['data: 1\n\n', { delayMs: 20 }, 'data: 2\n\n'] });
    const response = await fetch(server.url);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    expect(decoder.decode((await reader.read()).value)).toBe('data: 1\n\n');
    expect(decoder.decode((await reader.read()).value)).toBe('data: 2\n\n');
    expect((await reader.read()).done).toBe(true);
  });

  it('resets the connection after the body when asked', async () => {
    server.enqueue({ status: 200, body: ['partial'], ending: 'reset' });
    const response = await fetch(server.url);
    await expect(response.text()).rejects.toThrow();
    expect(await server.requests[0]!.outcome).toBe('reset');
  });

  it('keeps a hanging response open until the client leaves', async () => {
    server.enqueue({ status: 200, body: ['hello'], ending: 'hang' });
    const controller = new AbortController();
    const response = await fetch(server.url, { signal: controller.signal });
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('hello');
    controller.abort();
    expect(await server.requests[0]!.outcome).toBe('client-closed');
  });

  it('answers from the handler when the queue is empty, and 500 when there is neither', async () => {
    server.handle((request) => ({ status: 200, body: `echo ${request.path}` }));
    expect(await (await fetch(`${server.url}/ping`)).text()).toBe('echo /ping');
    server.handle(undefined);
    const response = await fetch(`${server.url}/missing`);
    expect(response.status).toBe(500);
    expect(await response.text()).toContain('no scripted response left for GET /missing');
  });

  it('delays the headers when asked', async () => {
    server.enqueue({ status: 200, body: 'late', headersDelayMs: 200 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    await expect(fetch(server.url, { signal: controller.signal })).rejects.toThrow();
  });

  it('refuses to give a URL before start()', () => {
    expect(() => new ScriptedServer().url).toThrow(/not started/);
  });
});
