import { reply, ScriptedModel } from '@lunation/runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { ALICE, startApi, type TestApi } from './support.js';

const APP = 'http://app.example';

let api: TestApi | undefined;

afterEach(async () => {
  await api?.close();
  api = undefined;
});

const preflight = (path: string, origin: string, method = 'POST', token = '') =>
  api!.call(path, {
    method: 'OPTIONS',
    token,
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization, content-type',
    },
  });

describe('cors: pages on other origins', () => {
  it('answers an allowed origin’s preflight with the route’s methods and headers, and marks its answers', async () => {
    api = await startApi(new ScriptedModel([reply('Hi.')]), { api: { cors: { origins: [APP] } } });
    const answer = await preflight('/chat', APP);
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBe(APP);
    expect(answer.headers.get('access-control-allow-methods')).toBe('POST');
    expect(answer.headers.get('access-control-allow-headers')).toBe(
      'authorization, content-type, last-event-id',
    );
    expect(answer.headers.get('access-control-max-age')).toBe('600');
    expect(answer.headers.get('vary')).toBe('Origin');
    expect(answer.headers.get('access-control-allow-credentials')).toBeNull();
    expect((await preflight('/threads/t1', APP, 'DELETE')).headers.get('access-control-allow-methods')).toBe(
      'GET, PATCH, DELETE',
    );

    // The request itself, and its errors, carry the headers a page needs to read them.
    const created = await api.call('/threads', { method: 'POST', headers: { origin: APP } });
    expect(created.status).toBe(201);
    expect(created.headers.get('access-control-allow-origin')).toBe(APP);
    expect(created.headers.get('access-control-expose-headers')).toContain('x-vercel-ai-ui-message-stream');
    const unauthorized = await api.call('/threads', { token: '', headers: { origin: APP } });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('access-control-allow-origin')).toBe(APP);
  });

  it('refuses another origin’s preflight (403 origin-not-allowed) and gives its answers no CORS headers', async () => {
    api = await startApi(new ScriptedModel([reply('Hi.')]), { api: { cors: { origins: [APP] } } });
    const answer = await preflight('/chat', 'http://evil.example');
    expect(answer.status).toBe(403);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('origin-not-allowed');
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    const listed = await api.call('/threads', { headers: { origin: 'http://evil.example' } });
    expect(listed.status).toBe(200);
    expect(listed.headers.get('access-control-allow-origin')).toBeNull();
    // An unknown route is still a 404.
    expect((await preflight('/nowhere', APP)).status).toBe(404);
  });

  it('allows any origin with "*" (and echoes the origin when credentials are allowed)', async () => {
    api = await startApi(new ScriptedModel([reply('Hi.')]), { api: { cors: { origins: '*' } } });
    expect((await preflight('/chat', 'http://any.example')).headers.get('access-control-allow-origin')).toBe(
      '*',
    );
    await api.close();
    api = await startApi(new ScriptedModel([reply('Hi.')]), {
      api: {
        cors: { origins: (origin) => origin.endsWith('.example'), credentials: true, maxAgeSeconds: 60 },
      },
    });
    const answer = await preflight('/chat', 'http://any.example');
    expect(answer.headers.get('access-control-allow-origin')).toBe('http://any.example');
    expect(answer.headers.get('access-control-allow-credentials')).toBe('true');
    expect(answer.headers.get('access-control-max-age')).toBe('60');
  });

  it('without the option a preflight is refused as before (401 without a token, 405 with one)', async () => {
    api = await startApi(new ScriptedModel([reply('Hi.')]));
    expect((await preflight('/chat', APP)).status).toBe(401);
    const answer = await preflight('/chat', APP, 'POST', ALICE);
    expect(answer.status).toBe(405);
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
  });
});
