import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DemoModel } from '../src/demo-model.js';
import { seedSandbox } from '../src/tools/seed-sandbox.js';
import {
  collectEventStream,
  readEventStream,
  readUntil,
  runEnd,
  type ServerSentEvent,
  temporaryDir,
} from './support.js';
import { ALICE, BOB, errorOf, startServer, type TestServer } from './test-server.js';

function eventsOf(events: readonly ServerSentEvent[], type: string) {
  return events.filter((event) => event.event === type).map((event) => event.data);
}

describe('the HTTP API (real HTTP, demo model, two tokens)', () => {
  let sandbox: Awaited<ReturnType<typeof temporaryDir>>;
  let api: TestServer;

  beforeAll(async () => {
    sandbox = await temporaryDir();
    await seedSandbox(`${sandbox.path}/sandbox`);
    api = await startServer(new DemoModel({ tokenDelayMs: 0 }), `${sandbox.path}/sandbox`);
  });

  afterAll(async () => {
    await api?.close();
    await sandbox?.remove();
  });

  async function createThread(token = ALICE): Promise<string> {
    const response = await api.call('/threads', { method: 'POST', token });
    expect(response.status).toBe(201);
    return ((await response.json()) as { thread: { id: string } }).thread.id;
  }

  it('streams a run as SSE, suspends for approval, resumes on a decision and keeps the history', async () => {
    const threadId = await createThread();
    const first = await api.call(`/threads/${threadId}/messages`, { json: { text: 'hello' } });
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const events = await collectEventStream(first);
    for (const event of events) expect(event.event).toBe(event.data.type);
    expect(events[0]?.event).toBe('run-start');
    expect(eventsOf(events, 'text-delta').length).toBeGreaterThan(10);
    expect(eventsOf(events, 'tool-result')).toMatchObject([
      { toolName: 'calculator', result: { status: 'success', data: { result: 35 } } },
    ]);
    const suspendedRun = runEnd(events);
    expect(suspendedRun).toMatchObject({ status: 'waiting', termination: { type: 'suspended' } });
    const ticket = suspendedRun.openTickets[0];
    expect(ticket).toMatchObject({
      toolName: 'read_file',
      action: 'approve',
      arguments: '{"path":"README.md"}',
    });

    const status = (await (await api.call(`/threads/${threadId}`)).json()) as { latestRun: unknown };
    expect(status.latestRun).toMatchObject({ status: 'waiting', openTickets: [{ id: ticket?.id }] });

    const resumed = await api.call(`/threads/${threadId}/decisions`, {
      json: {
        decisions: [{ decisionId: 'd1', ticketId: ticket?.id, action: 'resume', payload: { always: true } }],
      },
    });
    expect(resumed.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const resumedEvents = await collectEventStream(resumed);
    expect(eventsOf(resumedEvents, 'run-start')).toMatchObject([{ resumed: true }]);
    expect(eventsOf(resumedEvents, 'tool-result')).toMatchObject([
      { toolName: 'read_file', status: 'succeeded', result: { data: { path: 'README.md' } } },
    ]);
    const done = runEnd(resumedEvents);
    expect(done).toMatchObject({ status: 'done', termination: { type: 'natural-end' }, openTickets: [] });
    expect(done.finalText).toContain("Here is README.md:\n\n# The assistant's sandbox");

    // The same decision again changes nothing, and the answer is JSON (no run to stream).
    const repeated = await api.call(`/threads/${threadId}/decisions`, {
      json: { decisions: [{ decisionId: 'd1', ticketId: ticket?.id, action: 'resume' }] },
    });
    expect(repeated.status).toBe(200);
    expect(await repeated.json()).toEqual({ applied: [], ignored: ['d1'], openTickets: [] });

    // "always" was remembered: reading again needs no approval.
    const again = runEnd(
      await collectEventStream(
        await api.call(`/threads/${threadId}/messages`, { json: { text: 'list files' } }),
      ),
    );
    expect(again).toMatchObject({ status: 'done', finalText: 'The folder "." holds: README.md.' });

    const history = (await (await api.call(`/threads/${threadId}/messages`)).json()) as {
      messages: Array<{ seq: number; message: { role: string } }>;
    };
    expect(history.messages.map((record) => record.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(history.messages.map((record) => record.message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
  });

  it('cancels a running run, and refuses a second run on the busy thread with 409', async () => {
    const threadId = await createThread();
    const response = await api.call(`/threads/${threadId}/messages`, {
      json: { text: 'run the slow task with 20 steps' },
    });
    const stream = readEventStream(response);
    const seen: ServerSentEvent[] = [];
    await readUntil(stream, 'tool-execution-start', seen);
    const busy = await api.call(`/threads/${threadId}/messages`, { json: { text: 'hello?' } });
    expect(await errorOf(busy)).toMatchObject({ status: 409, code: 'thread-busy' });

    const cancel = await api.call(`/threads/${threadId}/cancel`, { method: 'POST' });
    expect(await cancel.json()).toEqual({ cancelled: true });
    await readUntil(stream, 'run-end', seen);
    expect(runEnd(seen)).toMatchObject({
      status: 'done',
      termination: { type: 'cancelled', reason: 'cancelled by the client' },
    });
    expect(eventsOf(seen, 'tool-progress').length).toBeLessThan(20);

    const idle = await api.call(`/threads/${threadId}/cancel`, { method: 'POST' });
    expect(await idle.json()).toEqual({ cancelled: false });
  });

  it('shows each token only its own threads', async () => {
    const aliceThread = await createThread(ALICE);
    const bobThread = await createThread(BOB);
    const list = async (token: string) =>
      (
        (await (await api.call('/threads', { token })).json()) as {
          threads: Array<{ id: string; resourceId: string }>;
        }
      ).threads;
    expect((await list(BOB)).map((thread) => thread.id)).toEqual([bobThread]);
    expect((await list(ALICE)).map((thread) => thread.id)).toContain(aliceThread);
    expect((await list(ALICE)).every((thread) => thread.resourceId === 'alice')).toBe(true);

    const asBob = [
      api.call(`/threads/${aliceThread}`, { token: BOB }),
      api.call(`/threads/${aliceThread}/messages`, { token: BOB }),
      api.call(`/threads/${aliceThread}/messages`, { token: BOB, json: { text: 'hi' } }),
      api.call(`/threads/${aliceThread}/decisions`, {
        token: BOB,
        json: { decisions: [{ ticketId: 't', action: 'resume' }] },
      }),
      api.call(`/threads/${aliceThread}/cancel`, { token: BOB, method: 'POST' }),
    ];
    for (const response of await Promise.all(asBob)) {
      expect(await errorOf(response)).toEqual({
        status: 404,
        code: 'not-found',
        message: `There is no thread "${aliceThread}"`,
      });
    }
    // Alice's thread is untouched.
    const history = (await (await api.call(`/threads/${aliceThread}/messages`)).json()) as {
      messages: unknown[];
    };
    expect(history.messages).toEqual([]);
  });

  it('pages the thread list: every thread once, in creation order with ties broken by id', async () => {
    const ids = [await createThread(BOB), await createThread(BOB)];
    type Listed = { threads: Array<{ id: string; createdAt: number }>; nextCursor: string | null };
    const first = (await (await api.call('/threads?limit=2', { token: BOB })).json()) as Listed;
    expect(first.threads).toHaveLength(2);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = (await (
      await api.call(`/threads?limit=2&cursor=${encodeURIComponent(first.nextCursor as string)}`, {
        token: BOB,
      })
    ).json()) as Listed;
    expect(second.nextCursor).toBeNull();
    const listed = [...first.threads, ...second.threads];
    expect(new Set(listed.map((thread) => thread.id)).size).toBe(listed.length);
    expect(listed.map((thread) => thread.id)).toEqual(expect.arrayContaining(ids));
    // Two threads created in the same millisecond tie on createdAt; the store then orders them by id.
    const inStoreOrder = [...listed].sort(
      (a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
    expect(listed).toEqual(inStoreOrder);
  });

  it('answers 401 without a valid bearer token', async () => {
    for (const token of ['', 'token-mallory', `${ALICE}x`]) {
      const response = await api.call('/threads', { token });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect((await errorOf(response)).code).toBe('unauthorized');
    }
    const lowercase = await api.call('/threads', {
      token: '',
      headers: { authorization: `bearer ${ALICE}` },
    });
    expect(lowercase.status).toBe(200);
  });

  it('answers bad requests with 4xx JSON errors', async () => {
    const threadId = await createThread();
    const post = (path: string, body: string | Uint8Array, contentType = 'application/json') =>
      api.call(path, { method: 'POST', body, headers: { 'content-type': contentType } });

    expect(await errorOf(await post(`/threads/${threadId}/messages`, '{"text": "hi"'))).toMatchObject({
      status: 400,
      code: 'invalid-json',
    });
    expect(
      await errorOf(await post(`/threads/${threadId}/messages`, new Uint8Array(2 * 1024 * 1024).fill(32))),
    ).toEqual({
      status: 413,
      code: 'payload-too-large',
      message: 'The request body is larger than 1048576 bytes',
    });
    expect(
      await errorOf(
        await post(`/threads/${threadId}/messages`, 'text=hi', 'application/x-www-form-urlencoded'),
      ),
    ).toMatchObject({
      status: 415,
      code: 'unsupported-media-type',
    });
    expect(await errorOf(await post(`/threads/${threadId}/messages`, '{"message":"hi"}'))).toMatchObject({
      status: 400,
      code: 'invalid-argument',
      message: expect.stringMatching(/^Invalid request body: .*text/),
    });
    expect(await errorOf(await post('/threads/no-such-thread/messages', '{"text":"hi"}'))).toEqual({
      status: 404,
      code: 'not-found',
      message: 'There is no thread "no-such-thread"',
    });
    expect(
      await errorOf(
        await post(`/threads/${threadId}/decisions`, '{"decisions":[{"ticketId":"nope","action":"resume"}]}'),
      ),
    ).toMatchObject({
      status: 400,
      code: 'unknown-ticket',
    });
    expect(
      await errorOf(
        await post(`/threads/${threadId}/decisions`, '{"decisions":[{"ticketId":"t","action":"approve"}]}'),
      ),
    ).toMatchObject({
      status: 400,
      code: 'decision-invalid',
    });
    expect(await errorOf(await api.call('/nowhere'))).toMatchObject({ status: 404, code: 'not-found' });
    expect(await errorOf(await api.call('/threads?limit=0'))).toMatchObject({
      status: 400,
      code: 'invalid-argument',
    });

    const wrongMethod = await api.call(`/threads/${threadId}/messages`, { method: 'DELETE' });
    expect(wrongMethod.headers.get('allow')).toBe('GET, POST');
    expect(await errorOf(wrongMethod)).toMatchObject({ status: 405, code: 'method-not-allowed' });
    // The server is still healthy after all of that.
    expect((await api.call(`/threads/${threadId}`)).status).toBe(200);
  });
});

describe('decisions with several open tickets', () => {
  let sandbox: Awaited<ReturnType<typeof temporaryDir>>;
  let api: TestServer | undefined;

  afterEach(async () => {
    await api?.close();
    await sandbox?.remove();
  });

  it('answers JSON while tickets stay open, then streams the resumed run', async () => {
    sandbox = await temporaryDir();
    await seedSandbox(`${sandbox.path}/sandbox`);
    const model = new ScriptedModel([
      {
        toolCalls: [
          { toolName: 'read_file', arguments: { path: 'README.md' } },
          { toolName: 'read_file', arguments: { path: '.' } },
        ],
      },
      reply('Read both.'),
    ]);
    api = await startServer(model, `${sandbox.path}/sandbox`);
    const threadId = (
      (await (await api.call('/threads', { method: 'POST' })).json()) as { thread: { id: string } }
    ).thread.id;
    const suspended = runEnd(
      await collectEventStream(
        await api.call(`/threads/${threadId}/messages`, { json: { text: 'read both' } }),
      ),
    );
    const [first, second] = suspended.openTickets;
    expect(suspended.openTickets).toHaveLength(2);

    const partial = await api.call(`/threads/${threadId}/decisions`, {
      json: { decisions: [{ decisionId: 'd1', ticketId: first?.id, action: 'resume' }] },
    });
    expect(partial.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await partial.json()).toEqual({ applied: ['d1'], ignored: [], openTickets: [second] });

    const last = await api.call(`/threads/${threadId}/decisions`, {
      json: { decisions: [{ decisionId: 'd2', ticketId: second?.id, action: 'cancel', reason: 'not now' }] },
    });
    const events = await collectEventStream(last);
    expect(eventsOf(events, 'tool-result').map((event) => (event as { status: string }).status)).toEqual([
      'succeeded',
      'cancelled',
    ]);
    expect(runEnd(events)).toMatchObject({ status: 'done', finalText: 'Read both.' });
  });
});

describe('token usage over SSE', () => {
  let sandbox: Awaited<ReturnType<typeof temporaryDir>>;
  let api: TestServer | undefined;

  afterEach(async () => {
    await api?.close();
    await sandbox?.remove();
  });

  it("step-end carries each step's own usage, run-end the run's total", async () => {
    sandbox = await temporaryDir();
    await seedSandbox(`${sandbox.path}/sandbox`);
    const model = new ScriptedModel([
      callTool('calculator', { expression: '1 + 2' }, { usage: { inputTokens: 40, outputTokens: 10 } }),
      reply('3.', { usage: { inputTokens: 100, outputTokens: 5 } }),
    ]);
    api = await startServer(model, `${sandbox.path}/sandbox`);
    const threadId = (
      (await (await api.call('/threads', { method: 'POST' })).json()) as { thread: { id: string } }
    ).thread.id;
    const events = await collectEventStream(
      await api.call(`/threads/${threadId}/messages`, { json: { text: 'what is 1 + 2' } }),
    );
    const steps = eventsOf(events, 'step-end') as Array<{ step: number; usage: Record<string, number> }>;
    expect(steps.map(({ step, usage }) => [step, usage.inputTokens, usage.outputTokens])).toEqual([
      [1, 40, 10],
      [2, 100, 5],
    ]);
    expect(runEnd(events).usage).toMatchObject({ inputTokens: 140, outputTokens: 15 });
  });
});
