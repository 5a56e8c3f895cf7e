import { randomUUID } from 'node:crypto';
import { RUN_JOURNAL_KEY } from '@lunation/runtime/internal';
import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import type { UIMessage } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { TestChat, textOf, toolParts, until } from './chat-client.js';
import { ALICE, BOB, reads, startApi, type TestApi } from './support.js';

let api: TestApi | undefined;

afterEach(async () => {
  await api?.close();
  api = undefined;
  reads.length = 0;
});

async function history(threadId: string, token = ALICE): Promise<UIMessage[]> {
  const response = await api!.call(`/chat/${threadId}/messages`, { token });
  expect(response.status).toBe(200);
  return ((await response.json()) as { messages: UIMessage[] }).messages;
}

/** Each part once: one tool part per call, and the text parts' text. */
function summary(message: UIMessage | undefined) {
  return {
    tools: toolParts(message).map((part) => `${part.type}:${part.toolCallId}:${part.state}`),
    texts: (message?.parts ?? []).filter((part) => part.type === 'text').map((part) => part.text),
  };
}

describe('GET /chat/:id/messages: a thread as AI SDK UI messages, what useChat starts from after a reload', () => {
  it('holds the open approval; a page started from it approves and gets the rest', async () => {
    api = await startApi(
      new ScriptedModel([callTool('read_file', { path: 'a.txt' }), reply('It says hello.')]),
    );
    const threadId = randomUUID();
    const first = new TestChat(api, threadId);
    await first.sendMessage({ text: 'read a.txt' });
    const runId = first.messages[1]!.id;

    const messages = await history(threadId);
    expect(messages.map((message) => [message.role, message.id])).toEqual([
      ['user', expect.any(String)],
      ['assistant', runId],
    ]);
    expect(messages[0]!.parts).toEqual([{ type: 'text', text: 'read a.txt' }]);
    const ticket = toolParts(first.messages[1])[0]!.approval!.id;
    expect(messages[1]!.parts).toEqual([
      { type: 'step-start' },
      {
        type: 'tool-read_file',
        toolCallId: 'call_1_1',
        state: 'approval-requested',
        input: { path: 'a.txt' },
        approval: { id: ticket },
      },
    ]);
    // Another tenant's (or an unknown) thread is an empty chat.
    expect(await history(threadId, BOB)).toEqual([]);
    expect(await history(randomUUID())).toEqual([]);

    const reloaded = new TestChat(api, threadId, ALICE, { messages });
    await reloaded.addToolApprovalResponse({ id: ticket, approved: true });
    await until(() => reloaded.status === 'ready' && textOf(reloaded.messages.at(-1)) !== '', 'the answer');
    expect(reloaded.messages).toHaveLength(2);
    expect(summary(reloaded.messages[1])).toEqual({
      tools: ['tool-read_file:call_1_1:output-available'],
      texts: ['It says hello.'],
    });
    expect(reads).toEqual(['a.txt']);

    // Once done, the history is the same message: the result and the text, a step each.
    const done = await history(threadId);
    expect(done).toHaveLength(2);
    expect(done[1]!.parts).toEqual([
      { type: 'step-start' },
      {
        type: 'tool-read_file',
        toolCallId: 'call_1_1',
        state: 'output-available',
        input: { path: 'a.txt' },
        output: 'contents of a.txt',
      },
      { type: 'step-start' },
      { type: 'text', text: 'It says hello.', state: 'done' },
    ]);
  });

  it('holds the question of a run whose first model call still streams (its input is stored only at its first checkpoint)', async () => {
    // Found by the browser soak (run 10 of seed 1031188479): a page reloaded 12 ms after Send read its history
    // before the run's first checkpoint, then resumed the run: it showed the answer without the question.
    api = await startApi(
      new ScriptedModel([callTool('read_file', { path: 'a.txt' }), reply('It says hello.')], {
        argumentsChunkSize: 2,
        partDelayMs: 40,
      }),
    );
    const threadId = randomUUID();
    const first = new TestChat(api, threadId);
    const sent = first.sendMessage({ text: 'read a.txt' });
    await until(() => api!.runtime.activeRun(threadId) !== undefined, 'the run to start');

    const messages = await history(threadId);
    expect((await api.store.listMessages(threadId)).length, 'nothing stored yet').toBe(0);
    expect(messages.map((message) => [message.role, message.parts])).toEqual([
      ['user', [{ type: 'text', text: 'read a.txt' }]],
    ]);
    const reloaded = new TestChat(api, threadId, ALICE, { messages });
    await reloaded.resumeStream();
    await sent;
    expect(reloaded.error).toBeUndefined();
    expect(reloaded.messages.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(summary(reloaded.messages[1])).toEqual({
      tools: ['tool-read_file:call_1_1:approval-requested'],
      texts: [],
    });
    // Once stored, the question is the stored message, once.
    const stored = await history(threadId);
    expect(stored.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(stored[0]!.id).toBe(messages[0]!.id);
  });

  it('waits for a send of the thread this server is starting: a page reloaded right after Send gets its question', async () => {
    api = await startApi(new ScriptedModel([callTool('read_file', { path: 'a.txt' })]));
    const threadId = randomUUID();
    // The send is held where it creates the thread, before its run starts.
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let creating = false;
    const createThread = api.store.createThread.bind(api.store);
    api.store.createThread = async (thread) => {
      creating = true;
      await held;
      return createThread(thread);
    };
    const sent = new TestChat(api, threadId).sendMessage({ text: 'read a.txt' });
    await until(() => creating, 'the send to create the thread');
    const reading = history(threadId);
    await new Promise((resolve) => setTimeout(resolve, 50));
    release();
    expect((await reading).map((message) => [message.role, message.parts])).toEqual([
      ['user', [{ type: 'text', text: 'read a.txt' }]],
    ]);
    await sent;
  });

  it('a page reloaded at any instant after an approval (history, then resumeStream) shows each part once', async () => {
    const text = 'The file says hello, in several small pieces.';
    const instants = [0, 15, 40, 80, 150, 300, 700];
    api = await startApi(
      new ScriptedModel(
        instants.flatMap(() => [callTool('read_file', { path: 'a.txt' }), reply(text)]),
        { textChunkSize: 4, partDelayMs: 25 },
      ),
    );
    let checked = 0;
    for (const instant of instants) {
      const threadId = randomUUID();
      const first = new TestChat(api, threadId);
      await first.sendMessage({ text: 'read a.txt' });
      const approval = toolParts(first.messages[1])[0]!.approval!.id;
      const approved = first.addToolApprovalResponse({ id: approval, approved: true });
      await new Promise((resolve) => setTimeout(resolve, instant));

      const reloaded = new TestChat(api, threadId, ALICE, { messages: await history(threadId) });
      await reloaded.resumeStream();
      await approved;
      await until(() => first.status === 'ready', 'the first page to finish');
      // A reload before the run continued shows the approval still asked (the page that approved streams on).
      if (
        reloaded.messages[1]?.parts.some((part) => 'state' in part && part.state === 'approval-requested')
      ) {
        expect(instant).toBeLessThan(40);
        continue;
      }
      expect(reloaded.error, `at ${instant} ms`).toBeUndefined();
      expect(reloaded.messages, `at ${instant} ms`).toHaveLength(2);
      const callId = toolParts(first.messages[1])[0]!.toolCallId;
      expect(summary(reloaded.messages[1]), `at ${instant} ms`).toEqual({
        tools: [`tool-read_file:${callId}:output-available`],
        texts: [text],
      });
      expect(summary(first.messages[1])).toEqual(summary(reloaded.messages[1]));
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(instants.length - 2);
  });

  it('a page reloaded right after a denial shows the denied call and the answer once', async () => {
    api = await startApi(
      new ScriptedModel(
        [callTool('read_file', { path: 'secret.txt' }), reply('All right, I will not read it.')],
        {
          textChunkSize: 3,
          partDelayMs: 30,
        },
      ),
    );
    const threadId = randomUUID();
    const first = new TestChat(api, threadId);
    await first.sendMessage({ text: 'read secret.txt' });
    const approval = toolParts(first.messages[1])[0]!.approval!.id;
    await first.addToolApprovalResponse({ id: approval, approved: false, reason: 'private' });
    await until(() => textOf(first.messages.at(-1)).length > 0, 'the continuation streaming');

    const reloaded = new TestChat(api, threadId, ALICE, { messages: await history(threadId) });
    await reloaded.resumeStream();
    expect(reloaded.error).toBeUndefined();
    expect(reloaded.messages).toHaveLength(2);
    expect(summary(reloaded.messages[1])).toEqual({
      tools: ['tool-read_file:call_1_1:output-denied'],
      texts: ['All right, I will not read it.'],
    });
    expect(reads).toEqual([]);
  });

  it('replays the stored message when the run log of the first invocation is gone (kept only a few minutes)', async () => {
    api = await startApi(
      new ScriptedModel([callTool('read_file', { path: 'a.txt' }), reply('It says hello, slowly.')], {
        textChunkSize: 3,
        partDelayMs: 30,
      }),
      { front: { retainMs: 1 } },
    );
    const threadId = randomUUID();
    const first = new TestChat(api, threadId);
    await first.sendMessage({ text: 'read a.txt' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await first.addToolApprovalResponse({
      id: toolParts(first.messages[1])[0]!.approval!.id,
      approved: true,
    });
    await until(() => textOf(first.messages.at(-1)).length > 0, 'the continuation streaming');

    const reloaded = new TestChat(api, threadId, ALICE, { messages: [first.messages[0]!] });
    await reloaded.resumeStream();
    expect(reloaded.error).toBeUndefined();
    expect(reloaded.messages).toHaveLength(2);
    expect(reloaded.messages[1]!.id).toBe(first.messages[1]!.id);
    expect(summary(reloaded.messages[1])).toEqual({
      tools: ['tool-read_file:call_1_1:output-available'],
      texts: ['It says hello, slowly.'],
    });
  });
});

describe('a page whose history was read while the run went on, and that resumes after it ended', () => {
  it('GET /chat/:id/stream replays the finished message (its history held only a part): each part once', async () => {
    const text = 'It says hello, in a good many small pieces.';
    api = await startApi(
      new ScriptedModel([callTool('read_file', { path: 'a.txt' }), reply(text)], {
        textChunkSize: 3,
        partDelayMs: 20,
      }),
    );
    const threadId = randomUUID();
    const first = new TestChat(api, threadId);
    await first.sendMessage({ text: 'read a.txt' });
    const approval = toolParts(first.messages[1])[0]!.approval!.id;
    const approved = first.addToolApprovalResponse({ id: approval, approved: true });
    await until(() => textOf(first.messages.at(-1)).length > 0, 'the continuation streaming');
    // The reloaded page reads its history mid-answer; the run ends before its resume request arrives.
    const partial = await history(threadId);
    expect(summary(partial[1]).texts).toEqual([]);
    await approved;
    await until(() => first.status === 'ready', 'the run to end');

    const reloaded = new TestChat(api, threadId, ALICE, { messages: partial });
    await reloaded.resumeStream();
    expect(reloaded.error).toBeUndefined();
    expect(reloaded.status).toBe('ready');
    expect(reloaded.messages.map((message) => message.id)).toEqual(partial.map((message) => message.id));
    expect(summary(reloaded.messages[1])).toEqual({
      tools: ['tool-read_file:call_1_1:output-available'],
      texts: [text],
    });
    expect(summary(reloaded.messages[1])).toEqual(summary(first.messages[1]));
    expect(reads).toEqual(['a.txt']);
  });

  it('answers 204 once the run ended longer ago than chatReplayMs', async () => {
    api = await startApi(new ScriptedModel([reply('Hi.')]), { api: { chatReplayMs: 2_000 } });
    const threadId = randomUUID();
    const chat = new TestChat(api, threadId);
    await chat.sendMessage({ text: 'hello' });
    const replayed = await api.call(`/chat/${threadId}/stream`);
    expect(replayed.status).toBe(200);
    const chunks = (await replayed.text())
      .split('\n\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => (JSON.parse(line.slice(6)) as { type: string }).type);
    expect(chunks).toEqual([
      'start',
      'start-step',
      'text-start',
      'text-delta',
      'text-end',
      'finish-step',
      'finish',
    ]);
    const ended = (await api.store.getLatestRun(threadId))!.updatedAt;
    await new Promise((resolve) => setTimeout(resolve, ended + 2_100 - Date.now()));
    expect((await api.call(`/chat/${threadId}/stream`)).status).toBe(204);
  });
});

describe('tool parts: static tool-<name>, dynamic-tool where the tool is not known in advance', () => {
  it('sends tool-<name> parts by default and dynamic-tool parts for the tools `dynamicTool` names', async () => {
    api = await startApi(
      new ScriptedModel([
        { ...callTool('calculator', { a: 1, b: 2 }) },
        callTool('read_file', { path: 'b.txt' }),
        reply('3.'),
      ]),
      { api: { dynamicTool: (toolName) => toolName === 'calculator' } },
    );
    const threadId = randomUUID();
    const chat = new TestChat(api, threadId);
    await chat.sendMessage({ text: 'add, then read' });
    const parts = chat.messages[1]!.parts.filter((part) => part.type !== 'step-start');
    expect(parts).toMatchObject([
      { type: 'dynamic-tool', toolName: 'calculator', state: 'output-available', output: 3 },
      { type: 'tool-read_file', state: 'approval-requested', input: { path: 'b.txt' } },
    ]);
    const stored = (await history(threadId))[1]!.parts.filter((part) => part.type !== 'step-start');
    expect(stored).toMatchObject([
      { type: 'dynamic-tool', toolName: 'calculator', state: 'output-available', output: 3 },
      { type: 'tool-read_file', state: 'approval-requested' },
    ]);
  });
});

describe('POST /chat/:id/stop: what a Stop button calls beside chat.stop()', () => {
  it('cancels the run (a call in flight ends denied, not input-available) and answers the UI messages', async () => {
    api = await startApi(new ScriptedModel([callTool('wait', { ms: 30_000 }), reply('never')]));
    const threadId = randomUUID();
    const chat = new TestChat(api, threadId);
    const sent = chat.sendMessage({ text: 'wait' });
    await until(() => toolParts(chat.messages[1])[0]?.state === 'input-available', 'the call running');
    const runId = chat.messages[1]!.id;

    // A stop naming another run (stale: sent before a newer run started) changes nothing.
    const stale = await api.call(`/chat/${threadId}/stop`, { json: { messageId: 'another-run' } });
    expect(await stale.json()).toMatchObject({ cancelled: false, runId });

    const response = await api.call(`/chat/${threadId}/stop`, { json: { messageId: runId } });
    await chat.stop();
    await sent;
    expect(response.status).toBe(200);
    const body = (await response.json()) as { cancelled: boolean; runId: string; messages: UIMessage[] };
    expect(body).toMatchObject({ cancelled: true, runId });
    const run = (await (await api.call(`/threads/${threadId}`)).json()) as {
      latestRun: { status: string; termination: { type: string } };
    };
    expect(run.latestRun).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
    chat.messages = body.messages;
    expect(summary(chat.messages[1])).toEqual({ tools: ['tool-wait:call_1_1:output-denied'], texts: [] });
    // Nothing runs any more: a second stop cancels nothing; another tenant's stop is a 404.
    expect(await (await api.call(`/chat/${threadId}/stop`, { method: 'POST' })).json()).toMatchObject({
      cancelled: false,
    });
    expect((await api.call(`/chat/${threadId}/stop`, { method: 'POST', token: BOB })).status).toBe(404);
  });
});

describe('what reaches a browser of a run', () => {
  it('neither the chat stream nor the stored messages carry a lease token or the runner (they stay in the run record)', async () => {
    api = await startApi(new ScriptedModel([callTool('calculator', { a: 1, b: 2 }), reply('3')]));
    const threadId = randomUUID();
    const stream = await api.call('/chat', {
      json: {
        id: threadId,
        messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'add' }] }],
        trigger: 'submit-message',
      },
    });
    const streamed = await stream.text();
    expect(streamed).toContain('"finish"');
    const run = (await api.store.listRuns(threadId)).items[0]!;
    const [runner] = run.state[RUN_JOURNAL_KEY] as Array<{
      owner: string;
      incarnation: string;
      token: number;
    }>;
    expect(runner).toMatchObject({
      owner: 'test-process',
      incarnation: expect.any(String),
      token: expect.any(Number),
    });
    const stored = await api.store.listMessages(threadId);
    // The steps' own facts ride in their messages: the model call's timing and usage only.
    expect(stored.filter((record) => record.message.role === 'assistant')[0]?.message.metadata).toMatchObject(
      {
        modelMs: expect.any(Number),
        usage: expect.any(Object),
      },
    );
    const answers = [
      streamed,
      JSON.stringify(await history(threadId)),
      await (await api.call(`/threads/${threadId}/messages`)).text(),
    ];
    for (const answer of answers) {
      expect(answer).not.toContain(runner!.owner);
      expect(answer).not.toContain(runner!.incarnation);
      expect(answer).not.toMatch(/"(token|leaseToken|owner|incarnation)"/);
    }
  });
});
