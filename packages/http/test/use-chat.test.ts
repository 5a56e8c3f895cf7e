import { randomUUID } from 'node:crypto';
import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { TestChat, textOf, toolParts, until } from './chat-client.js';
import { ALICE, BOB, reads, startApi, type TestApi } from './support.js';

let api: TestApi | undefined;

afterEach(async () => {
  await api?.close();
  api = undefined;
  reads.length = 0;
});

describe('the useChat endpoint, driven by the AI SDK client (ai 7: AbstractChat + DefaultChatTransport)', () => {
  it('streams text, reasoning and tool parts, asks for approval on a ticket and resumes on the approval', async () => {
    const model = new ScriptedModel([
      { reasoning: 'The user wants a file.', ...callTool('read_file', { path: 'a.txt' }) },
      reply('It says hello.'),
    ]);
    api = await startApi(model);
    const threadId = randomUUID();
    const chat = new TestChat(api, threadId);
    await chat.sendMessage({ text: 'read a.txt' });
    expect(chat.status).toBe('ready');
    const asked = chat.messages.at(-1);
    expect(asked?.role).toBe('assistant');
    expect(asked?.parts.find((part) => part.type === 'reasoning')).toMatchObject({
      text: 'The user wants a file.',
    });
    const [part] = toolParts(asked);
    expect(part).toMatchObject({ state: 'approval-requested', input: { path: 'a.txt' } });
    expect(reads).toEqual([]);

    // The approval id is the Lunation ticket: the thread (created by the chat) waits on it.
    const status = (await (await api.call(`/threads/${threadId}`)).json()) as {
      latestRun: { status: string; openTickets: Array<{ id: string }> };
    };
    expect(status.latestRun.status).toBe('waiting');
    expect(status.latestRun.openTickets.map((ticket) => ticket.id)).toEqual([part?.approval?.id]);

    await chat.addToolApprovalResponse({ id: part!.approval!.id, approved: true });
    await until(
      () => chat.status === 'ready' && textOf(chat.messages.at(-1)).includes('hello'),
      'the resumed answer',
    );
    expect(chat.messages).toHaveLength(2);
    const answered = chat.messages.at(-1);
    expect(toolParts(answered)[0]).toMatchObject({ state: 'output-available', output: 'contents of a.txt' });
    expect(textOf(answered)).toBe('It says hello.');
    expect(reads).toEqual(['a.txt']);
    const history = (await (await api.call(`/threads/${threadId}/messages`)).json()) as {
      messages: unknown[];
    };
    expect(history.messages).toHaveLength(4);
    // Another tenant neither sees the thread nor can resume its stream.
    expect((await api.call(`/threads/${threadId}`, { token: BOB })).status).toBe(404);
    expect((await api.call(`/chat/${threadId}/stream`, { token: BOB })).status).toBe(204);
  });

  it('maps a denial to a cancelled ticket: the part ends output-denied and the tool never runs', async () => {
    const model = new ScriptedModel([
      callTool('read_file', { path: 'secret.txt' }),
      reply('All right, I will not.'),
    ]);
    api = await startApi(model);
    const chat = new TestChat(api, randomUUID());
    await chat.sendMessage({ text: 'read secret.txt' });
    const approvalId = toolParts(chat.messages.at(-1))[0]!.approval!.id;
    await chat.addToolApprovalResponse({ id: approvalId, approved: false, reason: 'private' });
    await until(() => chat.status === 'ready' && textOf(chat.messages.at(-1)).includes('not'), 'the answer');
    expect(toolParts(chat.messages.at(-1))[0]?.state).toBe('output-denied');
    expect(reads).toEqual([]);
  });

  it('resumes an active run in a second client through GET /chat/:id/stream, then answers 204', async () => {
    const model = new ScriptedModel([reply('one two three four five six seven eight')], {
      textChunkSize: 4,
      partDelayMs: 40,
    });
    // No replay of a finished run (chatReplayMs: 0): once it ends, the stream answers 204 at once.
    api = await startApi(model, { api: { chatReplayMs: 0 } });
    const threadId = randomUUID();
    const first = new TestChat(api, threadId);
    const sent = first.sendMessage({ text: 'count' });
    await until(
      () => textOf(first.messages.at(-1)).length > 0 && first.messages.at(-1)?.role === 'assistant',
      'a first delta',
    );

    // A second client (a reloaded page) with the user's message but no answer yet resumes the stream.
    const second = new TestChat(api, threadId, ALICE, { messages: [first.messages[0]!] });
    await second.resumeStream();
    expect(textOf(second.messages.at(-1))).toBe('one two three four five six seven eight');
    await sent;
    expect(textOf(first.messages.at(-1))).toBe('one two three four five six seven eight');
    expect(second.messages.at(-1)?.id).toBe(first.messages.at(-1)?.id);

    // Nothing runs any more: the transport's reconnect gets 204 and the client stays as it is.
    const response = await api.call(`/chat/${threadId}/stream`);
    expect(response.status).toBe(204);
    const third = new TestChat(api, threadId);
    await third.resumeStream();
    expect(third.messages).toEqual([]);
    expect(third.status).toBe('ready');
  });

  it('answers the UI message stream protocol on the wire', async () => {
    api = await startApi(new ScriptedModel([reply('Hi.')]));
    const response = await api.call('/chat', {
      json: {
        id: randomUUID(),
        trigger: 'submit-message',
        messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hello' }] }],
      },
    });
    expect(response.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const lines = (await response.text()).split('\n\n').filter(Boolean);
    expect(lines.at(-1)).toBe('data: [DONE]');
    const chunks = lines
      .slice(0, -1)
      .map((line) => JSON.parse(line.slice('data: '.length)) as { type: string });
    expect(chunks.map((chunk) => chunk.type)).toEqual([
      'start',
      'start-step',
      'text-start',
      'text-delta',
      'text-end',
      'finish-step',
      'finish',
    ]);
    expect(chunks.at(-1)).toMatchObject({ finishReason: 'stop' });
    const bad = await api.call('/chat', { json: { id: 'x', messages: [] } });
    expect(bad.status).toBe(400);
  });
});

describe('resuming a run that continues after an approval (GET /chat/:id/stream replays the whole message)', () => {
  /** Approves the call in `first` and waits until the continuation has streamed some text. */
  async function approvedAndStreaming(threadId: string): Promise<TestChat> {
    const first = new TestChat(api!, threadId);
    await first.sendMessage({ text: 'read a.txt' });
    const part = toolParts(first.messages.at(-1))[0]!;
    await first.addToolApprovalResponse({ id: part.approval!.id, approved: true });
    await until(() => textOf(first.messages.at(-1)).length > 0, 'the continuation streaming');
    return first;
  }

  it('a reloaded page with only the user message gets the tool call, its result and the text, each once', async () => {
    api = await startApi(
      new ScriptedModel(
        [callTool('read_file', { path: 'a.txt' }), reply('It says hello, and more words here.')],
        {
          textChunkSize: 3,
          partDelayMs: 30,
        },
      ),
    );
    const threadId = randomUUID();
    const first = await approvedAndStreaming(threadId);

    const reloaded = new TestChat(api, threadId, ALICE, { messages: [first.messages[0]!] });
    await reloaded.resumeStream();
    expect(reloaded.error).toBeUndefined();
    expect(reloaded.status).toBe('ready');
    expect(reloaded.messages).toHaveLength(2);
    const message = reloaded.messages[1]!;
    expect(message.id).toBe(first.messages[1]!.id);
    const tools = toolParts(message);
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatchObject({
      state: 'output-available',
      input: { path: 'a.txt' },
      output: 'contents of a.txt',
      approval: { id: toolParts(first.messages[1])[0]!.approval!.id },
    });
    expect(message.parts.filter((part) => part.type === 'text')).toHaveLength(1);
    expect(textOf(message)).toBe('It says hello, and more words here.');
    expect(reads).toEqual(['a.txt']);
  });

  it('a page that still holds the approved message replaces it in place: each part once', async () => {
    api = await startApi(
      new ScriptedModel([callTool('read_file', { path: 'a.txt' }), reply('Done reading the file now.')], {
        textChunkSize: 3,
        partDelayMs: 30,
      }),
    );
    const threadId = randomUUID();
    const first = await approvedAndStreaming(threadId);
    const reloaded = new TestChat(api, threadId, ALICE, { messages: structuredClone(first.messages) });
    await reloaded.resumeStream();
    expect(reloaded.error).toBeUndefined();
    expect(reloaded.messages).toHaveLength(2);
    const message = reloaded.messages[1]!;
    expect(toolParts(message)).toHaveLength(1);
    expect(toolParts(message)[0]?.state).toBe('output-available');
    expect(message.parts.filter((part) => part.type === 'text')).toHaveLength(1);
    expect(textOf(message)).toBe('Done reading the file now.');
  });
});
