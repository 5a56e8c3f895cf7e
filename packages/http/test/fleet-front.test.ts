import { LunationError } from '@lunation/contract';
import { AgentWorker, LocalDispatchBackend, LocalDispatcher } from '@lunation/fleet';
import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../store-memory/src/index.js';
import { createHttpApi, FleetFront, type HttpApi, tokenAuth } from '../src/index.js';
import { ALICE, BOB, parseSse, reads, testRuntime } from './support.js';

const closing: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
  reads.length = 0;
});

/** A fleet server's API (no worker until `startWorker`), a dispatcher for an operator, on one store. */
function fleetApi() {
  const store = new MemoryStore();
  const backend = new LocalDispatchBackend();
  const dispatcher = () => {
    const created = new LocalDispatcher({ backend });
    closing.push(() => created.close());
    return created;
  };
  const api: HttpApi = createHttpApi({
    store,
    front: new FleetFront({ dispatcher: dispatcher(), store }),
    authenticate: tokenAuth(
      new Map([
        [ALICE, 'alice'],
        [BOB, 'bob'],
      ]),
    ),
    logError: (error) => {
      throw error;
    },
  });
  closing.push(() => api.close());
  const call = (
    path: string,
    { token = ALICE, json, method }: { token?: string; json?: unknown; method?: string } = {},
  ) =>
    api.handle(
      new Request(`http://fleet.test${path}`, {
        method: method ?? (json === undefined ? 'GET' : 'POST'),
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(json === undefined ? {} : { body: JSON.stringify(json) }),
      }),
    );
  const startWorker = (model = new ScriptedModel(() => reply('hi'))) => {
    const worker = new AgentWorker({
      runtime: testRuntime(store, model),
      dispatcher: dispatcher(),
      idleWaitMs: 50,
    }).start();
    closing.push(() => worker.stop({ deadlineMs: 2_000 }));
  };
  const thread = async () => {
    const created = await call('/threads', { json: {} });
    return ((await created.json()) as { thread: { id: string } }).thread.id;
  };
  return { store, admin: dispatcher(), call, startWorker, thread };
}

describe('a fleet server', () => {
  it('refuses to delete a thread while its inbox holds a submission, so a deleted run never runs again', async () => {
    // Found by the simulator (seeds 100, 316, 330, 374): a thread deleted while a submission was not yet
    // acknowledged had that submission applied again afterwards, from its input, every tool running again.
    const { call, startWorker, store, thread } = fleetApi();
    const threadId = await thread();
    const sent = await call(`/threads/${threadId}/messages`, { json: { text: 'hello' } });
    expect(sent.status).toBe(200);
    void sent.body?.cancel(); // the client goes away; the submission stays
    const refused = await call(`/threads/${threadId}`, { method: 'DELETE' });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('thread-busy');
    expect(await store.getThread(threadId)).toBeDefined();
    startWorker();
    let deleted = await call(`/threads/${threadId}`, { method: 'DELETE' });
    for (let attempt = 0; deleted.status === 409 && attempt < 100; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      deleted = await call(`/threads/${threadId}`, { method: 'DELETE' });
    }
    expect(deleted.status).toBe(200);
    expect(await store.getThread(threadId)).toBeUndefined();
  });

  it('answers a cancel of a run that had ended with how it ended, not cancelled: true', async () => {
    const { call, startWorker, thread } = fleetApi();
    startWorker();
    const threadId = await thread();
    const events = parseSse(
      await (await call(`/threads/${threadId}/messages`, { json: { text: 'hello' } })).text(),
    );
    const runId = (JSON.parse(events[0]?.data ?? '{}') as { runId: string }).runId;
    expect(events.at(-1)?.event).toBe('run-end');
    const cancel = await call(`/threads/${threadId}/cancel`, { json: {} });
    expect(cancel.status).toBe(200);
    expect(await cancel.json()).toEqual({ cancelled: false, runId, termination: { type: 'natural-end' } });
  });

  it('applies a cancel that names its run only to that run: a late cancel of an ended run leaves the next run alone', async () => {
    // A client whose cancel reached a stalled server, retried elsewhere and then sent its next message: when the
    // stalled server resumes, the cancel it still holds must not end the new run.
    const { call, startWorker, thread } = fleetApi();
    let open: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      open = resolve;
    });
    let calls = 0;
    startWorker(
      new ScriptedModel(async () => {
        calls++;
        if (calls === 2) await released;
        return reply(`answer ${calls}`);
      }),
    );
    const threadId = await thread();
    const first = parseSse(
      await (await call(`/threads/${threadId}/messages`, { json: { text: 'one' } })).text(),
    );
    const firstRun = (JSON.parse(first[0]?.data ?? '{}') as { runId: string }).runId;
    const second = await call(`/threads/${threadId}/messages`, { json: { text: 'two' } });
    const late = await call(`/threads/${threadId}/cancel`, { json: { runId: firstRun } });
    expect(late.status).toBe(200);
    expect(await late.json()).toMatchObject({ cancelled: false, runId: firstRun });
    open();
    const events = parseSse(await second.text());
    expect(JSON.parse(events.at(-1)?.data ?? '{}')).toMatchObject({
      status: 'done',
      termination: { type: 'natural-end' },
    });
  });

  it("continues a fork's run on a worker (POST /threads/:id/fork with continue): a continue submission, followed by id", async () => {
    const { call, startWorker, store, thread } = fleetApi();
    let answers = 0;
    startWorker(new ScriptedModel(() => reply(`answer ${++answers}`)));
    const threadId = await thread();
    await (await call(`/threads/${threadId}/messages`, { json: { text: 'hello' } })).text();
    const forked = await call(`/threads/${threadId}/fork`, { json: { checkpoint: 1, continue: true } });
    expect(forked.status, await forked.clone().text()).toBe(201);
    const fork = (await forked.json()) as { threadId: string; runId: string };
    const events = parseSse(await (await call(`/threads/${fork.threadId}/runs/${fork.runId}/events`)).text());
    expect(JSON.parse(events.at(-1)?.data ?? '{}')).toMatchObject({
      status: 'done',
      identity: { runId: fork.runId, threadId: fork.threadId },
    });
    const texts = (await store.listMessages(fork.threadId)).map((record) =>
      record.message.content.map((part) => (part.type === 'text' ? part.text : '')).join(''),
    );
    expect(texts).toEqual(['hello', 'answer 1', 'answer 2']);
    expect((await store.listMessages(threadId)).length).toBe(2);
  });

  it('starts one run for a message sent twice with the same client run id (a retry after a timeout, on any server)', async () => {
    const { call, startWorker, store, thread } = fleetApi();
    startWorker();
    const threadId = await thread();
    const send = () =>
      call(`/threads/${threadId}/messages`, { json: { text: 'hello', runId: 'client-run-1' } });
    const first = parseSse(await (await send()).text());
    const retried = parseSse(await (await send()).text());
    for (const events of [first, retried]) {
      expect(JSON.parse(events[0]?.data ?? '{}')).toEqual({ runId: 'client-run-1' });
      expect(events.at(-1)?.event).toBe('run-end');
    }
    const runs = (await store.listRuns(threadId)).items;
    expect(runs.map((run) => run.identity.runId)).toEqual(['client-run-1']);
    expect(
      (await store.listMessages(threadId)).filter((record) => record.message.role === 'user'),
    ).toHaveLength(1);
    const other = await thread();
    const stolen = await call(`/threads/${other}/messages`, { json: { text: 'hi', runId: 'client-run-1' } });
    expect(stolen.status).toBe(409);
    const invalid = await call(`/threads/${other}/messages`, { json: { text: 'hi', runId: '../x' } });
    expect(invalid.status).toBe(400);
  });

  it('answers a message to a dead-lettered thread with 409, lists its dead letters to its owner only, and resubmits it', async () => {
    const { admin, call, startWorker, thread } = fleetApi();
    const threadId = await thread();
    const first = await call(`/threads/${threadId}/messages`, { json: { text: 'hello' } });
    await first.body?.cancel(); // the client detaches; the submission stays
    const claim = await admin.claim({ workerId: 'broken', waitMs: 1_000 });
    expect(claim?.threadId).toBe(threadId);
    await admin.fail(claim!, new LunationError('internal', 'a bug in a tool'), { retryable: false });

    const refused = await call(`/threads/${threadId}/messages`, { json: { text: 'anyone?' } });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'dead-lettered',
      message: expect.stringMatching(/dead-lettered.*kept.*resubmits/),
    });
    const listed = (await (await call('/dead-letters')).json()) as {
      deadLetters: Array<{ threadId: string }>;
    };
    expect(listed.deadLetters.map((letter) => letter.threadId)).toEqual([threadId]);
    expect(await (await call('/dead-letters', { token: BOB })).json()).toEqual({ deadLetters: [] });
    expect((await call(`/threads/${threadId}/resubmit`, { token: BOB, json: {} })).status).toBe(404);

    const resubmit = await call(`/threads/${threadId}/resubmit`, { json: {} });
    expect(resubmit.status).toBe(202);
    expect(await resubmit.json()).toEqual({ resubmitted: true, threadId });
    startWorker();
    const runs = async () =>
      ((await (await call(`/threads/${threadId}/runs`)).json()) as { runs: Array<{ status: string }> }).runs;
    for (
      let tries = 0;
      tries < 100 && (await runs()).filter((run) => run.status === 'done').length < 2;
      tries++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await runs()).map((run) => run.status)).toEqual(['done', 'done']);
  });

  it("holds the question of a worker's run whose first model call still streams in the chat history", async () => {
    const { call, startWorker, store, thread } = fleetApi();
    startWorker(
      new ScriptedModel([callTool('read_file', { path: 'a.txt' })], {
        argumentsChunkSize: 2,
        partDelayMs: 40,
      }),
    );
    const threadId = await thread();
    const user = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'read a.txt' }] };
    const sent = await call('/chat', { json: { id: threadId, messages: [user] } });
    const reader = sent.body!.getReader();
    let seen = '';
    while (!seen.includes('tool-input-start')) seen += new TextDecoder().decode((await reader.read()).value);

    expect(await store.listMessages(threadId), 'nothing stored yet').toEqual([]);
    const history = async () =>
      (
        (await (await call(`/chat/${threadId}/messages`)).json()) as {
          messages: Array<{ id: string; role: string; parts: unknown[] }>;
        }
      ).messages;
    const pending = await history();
    expect(pending.map((message) => [message.role, message.parts])).toEqual([
      ['user', [{ type: 'text', text: 'read a.txt' }]],
    ]);
    while (!(await reader.read()).done);
    const stored = await history();
    expect(stored.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(stored[0]!.id).toBe(pending[0]!.id);
  });

  it('gives a page reloaded while its run waits for a worker the question, then the answer as the worker starts it', async () => {
    const { call, startWorker, thread } = fleetApi();
    const threadId = await thread();
    const user = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'read a.txt' }] };
    const sent = await call('/chat', { json: { id: threadId, messages: [user] } });
    expect(sent.status).toBe(200);
    await sent.body?.cancel();
    // The page reloads: no worker has the run yet.
    const history = (await (await call(`/chat/${threadId}/messages`)).json()) as {
      messages: Array<{ role: string; parts: unknown[] }>;
    };
    expect(history.messages.map((message) => [message.role, message.parts])).toEqual([
      ['user', [{ type: 'text', text: 'read a.txt' }]],
    ]);
    const resumed = await call(`/chat/${threadId}/stream`);
    expect(resumed.status).toBe(200);
    startWorker(new ScriptedModel([callTool('read_file', { path: 'a.txt' })]));
    const chunks = parseSse(await resumed.text())
      .filter((event) => event.data.startsWith('{'))
      .map((event) => JSON.parse(event.data) as { type: string; messageId?: string });
    expect(chunks[0]).toMatchObject({ type: 'start', messageId: expect.any(String) });
    expect(chunks.map((chunk) => chunk.type)).toContain('tool-approval-request');
    expect(chunks.at(-1)?.type).toBe('finish');
  });

  it('resumes a chat that continues after an approval with the whole message, from the run log of the fleet', async () => {
    const { call, startWorker, thread } = fleetApi();
    startWorker(
      new ScriptedModel([callTool('read_file', { path: 'a.txt' }), reply('It says hello, in pieces.')], {
        textChunkSize: 3,
        partDelayMs: 40,
      }),
    );
    const threadId = await thread();
    const chunks = (text: string) =>
      parseSse(text)
        .filter((event) => event.data.startsWith('{'))
        .map((event) => JSON.parse(event.data) as { type: string; approvalId?: string; messageId?: string });
    const user = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'read a.txt' }] };
    const asked = chunks(await (await call('/chat', { json: { id: threadId, messages: [user] } })).text());
    const approvalId = asked.find((chunk) => chunk.type === 'tool-approval-request')?.approvalId;
    const runId = asked[0]?.messageId;
    expect(approvalId).toBeDefined();
    const approved = {
      id: runId,
      role: 'assistant',
      parts: [
        {
          type: 'tool-read_file',
          toolCallId: 'call_1_1',
          state: 'approval-responded',
          approval: { id: approvalId, approved: true },
        },
      ],
    };
    const continuation = await call('/chat', {
      json: { id: threadId, messages: [user, approved], messageId: runId },
    });
    const reader = continuation.body!.getReader();
    let seen = '';
    while (!seen.includes('text-delta')) seen += new TextDecoder().decode((await reader.read()).value);

    // A reload now: the resumed stream holds the call's start, its approval and its result before the text.
    const resumed = chunks(await (await call(`/chat/${threadId}/stream`)).text());
    await reader.cancel();
    const types = resumed.map((chunk) => chunk.type).filter((type) => !type.endsWith('-delta'));
    expect(types).toEqual([
      'start',
      'start-step',
      'tool-input-start',
      'tool-input-available',
      'tool-approval-request',
      'finish-step',
      'tool-output-available',
      'start-step',
      'text-start',
      'text-end',
      'finish-step',
      'finish',
    ]);
    expect(resumed[0]).toMatchObject({ messageId: runId });
    expect(reads).toEqual(['a.txt']);
  });
});
