import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import type { InboxThread, RunTimeline } from '../src/index.js';
import { BOB, parseSse, readSse, reads, runEndOf, startApi, type TestApi } from './support.js';

let api: TestApi | undefined;

afterEach(async () => {
  await api?.close();
  api = undefined;
});

async function createThread(
  test: TestApi,
  metadata?: Record<string, unknown>,
  token?: string,
): Promise<string> {
  const response = await test.call('/threads', {
    method: 'POST',
    ...(metadata ? { json: { metadata } } : {}),
    ...(token ? { token } : {}),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { thread: { id: string } }).thread.id;
}

describe('@lunation/http over real HTTP on a SQLite file', () => {
  it("decides only on the caller's own thread: another owner's, an unowned or a missing thread is 404, nothing written", async () => {
    const model = new ScriptedModel([callTool('read_file', { path: 'a.txt' }), reply('It says hello.')]);
    api = await startApi(model);
    // A thread the runtime ran without an owner: with sign-in, it is no caller's.
    const unowned = await (await api.runtime.run({ threadId: 'unowned', input: 'read a.txt' })).result;
    expect(unowned.status).toBe('waiting');
    const ticketId = unowned.openTickets[0]!.id;
    const answers = [
      await api.call('/threads/unowned/decisions', { json: { decisions: [{ ticketId, action: 'resume' }] } }),
      await api.call('/threads/missing/decisions', { json: { decisions: [{ ticketId, action: 'resume' }] } }),
    ];
    expect(await Promise.all(answers.map((answer) => answer.json()))).toEqual([
      { error: { code: 'not-found', message: 'There is no thread "unowned"' } },
      { error: { code: 'not-found', message: 'There is no thread "missing"' } },
    ]);
    expect(answers.map((answer) => answer.status)).toEqual([404, 404]);
    // Nothing was written: the waiting run still waits on its ticket, and no thread "missing" was made.
    expect(await api.store.getLatestRun('unowned')).toMatchObject({
      status: 'waiting',
      openTickets: [{ id: ticketId }],
    });
    expect(await api.store.getThread('missing')).toBeUndefined();
    expect(reads).not.toContain('a.txt');
  });

  it('streams one run for a message retried with the same run id, and lets a cancel that names an ended run cancel nothing', async () => {
    const model = new ScriptedModel([reply('one'), reply('two')]);
    api = await startApi(model);
    const threadId = await createThread(api);
    const send = () => api!.call(`/threads/${threadId}/messages`, { json: { text: 'hi', runId: 'mine-1' } });
    const first = await readSse(await send());
    const retried = await readSse(await send());
    expect(retried).toEqual(first);
    expect(runEndOf(first).identity.runId).toBe('mine-1');
    expect((await api.store.listRuns(threadId)).items).toHaveLength(1);
    const cancel = await api.call(`/threads/${threadId}/cancel`, { json: { runId: 'mine-1' } });
    expect(await cancel.json()).toEqual({ cancelled: false, runId: 'mine-1' });
  });

  it('streams a run with event ids, suspends it for approval, lists it in the inbox and resumes it', async () => {
    const model = new ScriptedModel([callTool('read_file', { path: 'a.txt' }), reply('It says hello.')]);
    api = await startApi(model);
    const threadId = await createThread(api);
    const events = await readSse(
      await api.call(`/threads/${threadId}/messages`, { json: { text: 'read a.txt' } }),
    );
    expect(events.map((event) => event.id)).toEqual(events.map((_, index) => String(index + 1)));
    const suspended = runEndOf(events);
    expect(suspended.status).toBe('waiting');
    const ticket = suspended.openTickets[0]!;

    const inbox = (await (await api.call('/inbox')).json()) as { threads: InboxThread[] };
    expect(inbox.threads).toHaveLength(1);
    expect(inbox.threads[0]).toMatchObject({
      thread: { id: threadId },
      runId: suspended.identity.runId,
      tickets: [
        { ticketId: ticket.id, toolName: 'read_file', arguments: { path: 'a.txt' }, action: 'approve' },
      ],
    });
    expect(
      ((await (await api.call('/inbox', { token: BOB })).json()) as { threads: unknown[] }).threads,
    ).toEqual([]);

    const resumed = await readSse(
      await api.call(`/threads/${threadId}/decisions`, {
        json: { decisions: [{ ticketId: ticket.id, action: 'resume' }] },
      }),
    );
    // The run's log continues: the resumed invocation's ids follow the first one's.
    expect(Number(resumed[0]?.id)).toBe(events.length + 1);
    expect(runEndOf(resumed).status).toBe('done');
    expect(((await (await api.call('/inbox')).json()) as { threads: unknown[] }).threads).toEqual([]);

    // A client that reconnects after an event id gets every later event once, in order.
    const after = events.length - 2;
    const followed = await readSse(
      await api.call(`/threads/${threadId}/runs/${suspended.identity.runId}/events`, {
        headers: { 'last-event-id': String(after) },
      }),
    );
    expect(followed.map((event) => event.id)).toEqual([String(after + 1), String(after + 2)]);
    expect(followed.at(-1)?.event).toBe('run-end');
  });

  it('lists runs and builds a timeline from the store: steps, tools, checkpoints, suspension and resume', async () => {
    const model = new ScriptedModel([
      callTool('read_file', { path: 'a.txt' }, { usage: { inputTokens: 40, outputTokens: 10 } }),
      reply('It says hello.', { usage: { inputTokens: 60, outputTokens: 5 } }),
    ]);
    api = await startApi(model);
    const threadId = await createThread(api);
    const ticket = runEndOf(
      await readSse(await api.call(`/threads/${threadId}/messages`, { json: { text: 'read a.txt' } })),
    ).openTickets[0]!;
    await readSse(
      await api.call(`/threads/${threadId}/decisions`, {
        json: { decisions: [{ ticketId: ticket.id, action: 'resume' }] },
      }),
    );
    const runs = (await (await api.call(`/threads/${threadId}/runs`)).json()) as {
      runs: Array<{ runId: string; status: string; steps: number }>;
      nextCursor: null;
    };
    expect(runs.runs).toHaveLength(1);
    expect(runs.runs[0]).toMatchObject({ status: 'done', steps: 2 });
    const runId = runs.runs[0]!.runId;

    const timeline = (await (
      await api.call(`/threads/${threadId}/runs/${runId}/timeline`)
    ).json()) as RunTimeline;
    const kinds = timeline.entries.map((entry) => entry.kind);
    expect(kinds[0]).toBe('run-created');
    expect(kinds.at(-1)).toBe('run-ended');
    expect(
      kinds.filter((kind) => kind !== 'checkpoint'),
      JSON.stringify(timeline.entries.map((e) => [e.kind, e.at])),
    ).toEqual(['run-created', 'step', 'suspended', 'resumed', 'tool', 'step', 'run-ended']);
    const steps = timeline.entries.filter((entry) => entry.kind === 'step');
    expect(steps.map((step) => [step.step, step.model.usage?.inputTokens])).toEqual([
      [1, 40],
      [2, 60],
    ]);
    expect(steps[0]?.model.latencyMs).toEqual(expect.any(Number));
    // With sign-in, callers do not see the process names (lease owners can hold host names and folders).
    expect(steps[0]?.worker.owner).toBe('process 1');
    expect(JSON.stringify(timeline)).not.toContain('test-process');
    // The resume took the lease again: a new token.
    expect(steps[1]!.leaseToken!).toBeGreaterThan(steps[0]!.leaseToken!);
    const tool = timeline.entries.find((entry) => entry.kind === 'tool');
    expect(tool).toMatchObject({
      toolName: 'read_file',
      status: 'completed',
      attempts: 1,
      rerun: false,
      fromLedger: false,
    });
    expect(timeline.entries.filter((entry) => entry.kind === 'checkpoint').length).toBeGreaterThan(0);
    expect(timeline.workers).toHaveLength(1);
    expect(timeline.run).toMatchObject({ runId, status: 'done', finalText: 'It says hello.' });

    expect((await api.call(`/threads/${threadId}/runs/${runId}/timeline`, { token: BOB })).status).toBe(404);
    expect((await api.call(`/threads/${threadId}/runs/nope/timeline`)).status).toBe(404);
  });

  it('names the processes of a timeline by their lease owner only when asked (the default without sign-in)', async () => {
    for (const options of [{ showProcessNames: true }, { authenticate: undefined }]) {
      const model = new ScriptedModel([reply('hi')]);
      api = await startApi(model, { api: options });
      const threadId = await createThread(api);
      const runId = runEndOf(
        await readSse(await api.call(`/threads/${threadId}/messages`, { json: { text: 'hello' } })),
      ).identity.runId;
      const timeline = (await (
        await api.call(`/threads/${threadId}/runs/${runId}/timeline`)
      ).json()) as RunTimeline;
      expect(timeline.workers.map((worker) => worker.owner)).toEqual(['test-process']);
      const step = timeline.entries.find((entry) => entry.kind === 'step');
      expect(step?.kind === 'step' && step.worker.owner).toBe('test-process');
      await api.close();
      api = undefined;
    }
  });

  it("renames a thread: PATCH merges metadata keys (null removes one), only on the caller's thread", async () => {
    const model = new ScriptedModel(() => reply('ok'));
    api = await startApi(model);
    const threadId = await createThread(api, { title: 'First', tags: ['a'] });
    const renamed = await api.call(`/threads/${threadId}`, {
      method: 'PATCH',
      json: { metadata: { title: 'Renamed', tags: null, pinned: true } },
    });
    expect(renamed.status).toBe(200);
    expect(((await renamed.json()) as { thread: { metadata: unknown } }).thread.metadata).toEqual({
      title: 'Renamed',
      pinned: true,
    });
    expect((await api.store.getThread(threadId))?.metadata).toEqual({ title: 'Renamed', pinned: true });
    const found = (await (await api.call('/threads?search=renamed')).json()) as {
      threads: Array<{ id: string }>;
    };
    expect(found.threads.map((thread) => thread.id)).toEqual([threadId]);

    const other = await api.call(`/threads/${threadId}`, {
      method: 'PATCH',
      token: BOB,
      json: { metadata: { title: 'Mine now' } },
    });
    expect(other.status).toBe(404);
    const invalid = await api.call(`/threads/${threadId}`, { method: 'PATCH', json: { title: 'x' } });
    expect(invalid.status).toBe(400);
    expect((await api.store.getThread(threadId))?.metadata).toEqual({ title: 'Renamed', pinned: true });
  });

  it('searches threads by title, metadata and first message, paged', async () => {
    const model = new ScriptedModel(() => reply('ok'));
    api = await startApi(model);
    const titled = await createThread(api, { title: 'Quarterly Report' });
    const tagged = await createThread(api, { tags: ['report-2026'] });
    const talked = await createThread(api);
    await readSse(
      await api.call(`/threads/${talked}/messages`, { json: { text: 'draft the REPORT please' } }),
    );
    await createThread(api, { title: 'unrelated' });
    await createThread(api, { title: 'report of bob' }, BOB);

    const all = (await (await api.call('/threads?search=report')).json()) as {
      threads: Array<{ id: string }>;
    };
    expect(all.threads.map((thread) => thread.id)).toEqual([titled, tagged, talked]);

    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `/threads?search=report&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = (await (await api.call(query)).json()) as {
        threads: Array<{ id: string }>;
        nextCursor: string | null;
      };
      expect(page.threads.length).toBeLessThanOrEqual(1);
      ids.push(...page.threads.map((thread) => thread.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(ids).toEqual([titled, tagged, talked]);
  });

  it('deletes a thread, refuses while a run holds it, and scopes deletion to the caller', async () => {
    const model = new ScriptedModel([{ text: 'slow answer', delayMs: 400 }]);
    api = await startApi(model);
    const threadId = await createThread(api);
    expect((await api.call(`/threads/${threadId}`, { method: 'DELETE', token: BOB })).status).toBe(404);
    const running = api.call(`/threads/${threadId}/messages`, { json: { text: 'go' } });
    const response = await running;
    const busy = await api.call(`/threads/${threadId}`, { method: 'DELETE' });
    expect(busy.status).toBe(409);
    expect(((await busy.json()) as { error: { code: string } }).error.code).toBe('thread-busy');
    await readSse(response);
    // The lease is released just after run-end.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const deleted = await api.call(`/threads/${threadId}`, { method: 'DELETE' });
    expect(await deleted.json()).toEqual({ deleted: true });
    expect((await api.call(`/threads/${threadId}`)).status).toBe(404);
    const wrongMethod = await api.call(`/threads/${threadId}`, { method: 'PUT' });
    expect(wrongMethod.headers.get('allow')).toBe('GET, PATCH, DELETE');
  });

  it('detaches a dropped stream (the run goes on) and resumes it from Last-Event-ID', async () => {
    const model = new ScriptedModel([reply('one two three four five six')], {
      textChunkSize: 4,
      partDelayMs: 30,
    });
    api = await startApi(model);
    const threadId = await createThread(api);
    const controller = new AbortController();
    const response = await api.call(`/threads/${threadId}/messages`, {
      json: { text: 'count' },
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    let text = '';
    while (!text.includes('text-delta')) text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    const seen = parseSse(text.slice(0, text.lastIndexOf('\n\n') + 2));
    const last = seen.at(-1)!;
    const runId = (JSON.parse(seen[0]!.data) as { identity: { runId: string } }).identity.runId;
    const rest = await readSse(
      await api.call(`/threads/${threadId}/runs/${runId}/events`, { headers: { 'last-event-id': last.id! } }),
    );
    expect(rest[0]?.id).toBe(String(Number(last.id) + 1));
    expect(runEndOf(rest).status).toBe('done');
    const deltas = [...seen, ...rest]
      .filter((event) => event.event === 'text-delta')
      .map((event) => (JSON.parse(event.data) as { delta: string }).delta)
      .join('');
    expect(deltas).toBe('one two three four five six');
    expect(
      (await api.call(`/threads/${threadId}/runs/${runId}/events`, { headers: { 'last-event-id': 'x' } }))
        .status,
    ).toBe(400);
  });
});
