import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DemoModel } from '../src/demo-model.js';
import { seedSandbox } from '../src/tools/seed-sandbox.js';
import { collectEventStream, runEnd, temporaryDir } from './support.js';
import { errorOf, startServer, type TestServer } from './test-server.js';

const nested = (depth: number, inner = '1') => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;

describe('the HTTP API on hostile or broken requests (real HTTP)', () => {
  let sandbox: Awaited<ReturnType<typeof temporaryDir>>;
  let api: TestServer;
  const logged: unknown[] = [];

  beforeAll(async () => {
    sandbox = await temporaryDir();
    await seedSandbox(`${sandbox.path}/sandbox`);
    api = await startServer(new DemoModel({ tokenDelayMs: 0 }), `${sandbox.path}/sandbox`, {
      logError: (error) => logged.push(error),
    });
  });

  afterAll(async () => {
    await api?.close();
    await sandbox?.remove();
  });

  /** A thread whose run waits for approval of read_file; resolves with its id and the ticket id. */
  async function waitingThread(): Promise<{ threadId: string; ticketId: string }> {
    const created = await api.call('/threads', { method: 'POST' });
    const threadId = ((await created.json()) as { thread: { id: string } }).thread.id;
    const events = await collectEventStream(
      await api.call(`/threads/${threadId}/messages`, { json: { text: 'hello' } }),
    );
    const ticketId = runEnd(events).openTickets[0]?.id;
    if (ticketId === undefined) throw new Error('the demo model did not ask for approval');
    return { threadId, ticketId };
  }

  it('refuses JSON nested deeper than 64 levels with 400 before validating it', async () => {
    const { threadId, ticketId } = await waitingThread();
    // 3000 levels in 6 KB: enough to overflow the stack of a recursive validator.
    const deep = `{"decisions":[{"ticketId":"${ticketId}","action":"resume","payload":${nested(3000)}}]}`;
    expect(deep.length).toBeLessThan(6_200);
    const response = await api.call(`/threads/${threadId}/decisions`, {
      method: 'POST',
      body: deep,
      headers: { 'content-type': 'application/json' },
    });
    expect(await errorOf(response)).toEqual({
      status: 400,
      code: 'nesting-too-deep',
      message: 'The request body nests arrays and objects 3003 levels deep; at most 64 are accepted',
    });
    const status = (await (await api.call(`/threads/${threadId}`)).json()) as {
      latestRun: { status: string; openTickets: Array<{ id: string }> };
    };
    expect(status.latestRun).toMatchObject({ status: 'waiting', openTickets: [{ id: ticketId }] });
    expect(logged).toEqual([]);
  });

  it('accepts a body exactly 64 levels deep', async () => {
    // The body object is level 1, metadata level 2, the arrays below it levels 3 to 64.
    const body = `{"metadata":{"deep":${nested(62)}}}`;
    const response = await api.call('/threads', {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(201);
    const tooDeep = await api.call('/threads', {
      method: 'POST',
      body: `{"metadata":{"deep":${nested(63)}}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(await errorOf(tooDeep)).toMatchObject({ status: 400, code: 'nesting-too-deep' });
  });

  it('refuses two decisions for one ticket in one request, changing nothing', async () => {
    const { threadId, ticketId } = await waitingThread();
    const response = await api.call(`/threads/${threadId}/decisions`, {
      json: {
        decisions: [
          { ticketId, action: 'resume' },
          { ticketId, action: 'cancel' },
        ],
      },
    });
    expect(await errorOf(response)).toEqual({
      status: 400,
      code: 'decision-invalid',
      message: `Decisions #0 and #1 both decide ticket "${ticketId}"; send one decision per ticket`,
    });
    const status = (await (await api.call(`/threads/${threadId}`)).json()) as {
      latestRun: { status: string; openTickets: Array<{ id: string }> };
    };
    expect(status.latestRun).toMatchObject({ status: 'waiting', openTickets: [{ id: ticketId }] });

    const resumed = await collectEventStream(
      await api.call(`/threads/${threadId}/decisions`, {
        json: { decisions: [{ ticketId, action: 'cancel' }] },
      }),
    );
    expect(runEnd(resumed)).toMatchObject({ status: 'done', termination: { type: 'natural-end' } });
    expect(runEnd(resumed).finalText).toContain('All right, I will not do that.');
  });

  it('stays quiet when a client hangs up in the middle of a body, and keeps serving', async () => {
    const { hostname, port } = new URL(api.url);
    const received = new Promise<IncomingMessage>((resolve) => api.server.server.once('request', resolve));
    const socket = connect(Number(port), hostname);
    socket.write(
      'POST /threads HTTP/1.1\r\nhost: x\r\nauthorization: Bearer token-alice\r\n' +
        'content-type: application/json\r\ncontent-length: 100\r\n\r\n{"metadata":',
    );
    const request = await received;
    const closed = new Promise<void>((resolve) => request.once('close', () => resolve()));
    socket.destroy();
    await closed;
    // The handler reacts to the aborted body in the same turn; give it that turn.
    await new Promise((resolve) => setImmediate(resolve));
    expect(logged).toEqual([]);
    expect((await api.call('/threads')).status).toBe(200);
  });
});
