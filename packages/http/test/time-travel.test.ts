import type { MessageRecord, ModelRequest } from '@lunation/contract';
import type { ThreadStepCheckpoint } from '@lunation/runtime';
import { ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { BOB, readSse, reads, runEndOf, startApi, type TestApi } from './support.js';

let api: TestApi | undefined;

afterEach(async () => {
  await api?.close();
  api = undefined;
  reads.length = 0;
});

/** Answers from the conversation (not a call count), so a fork and its original answer the same history alike. */
function conversationModel(): ScriptedModel {
  return new ScriptedModel((request: ModelRequest): ScriptedResponse => {
    const last = request.messages.at(-1)!;
    if (last.role === 'tool') {
      const [result] = last.content;
      return { text: `It says: ${result?.result.data ?? result?.result.message}` };
    }
    const text = last.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
    if (text.startsWith('read '))
      return { toolCalls: [{ toolName: 'read_file', arguments: { path: text.slice(5) } }] };
    return { text: `You said: ${text}` };
  });
}

async function json<T>(response: Response, status = 200): Promise<T> {
  expect(response.status, await response.clone().text()).toBe(status);
  return (await response.json()) as T;
}

/** Sends a message; approves what it asks, until its run ends. */
async function converse(threadId: string, text: string): Promise<void> {
  let events = await readSse(await api!.call(`/threads/${threadId}/messages`, { json: { text } }));
  while (runEndOf(events).status === 'waiting') {
    const decisions = runEndOf(events).openTickets.map((ticket) => ({
      ticketId: ticket.id,
      action: 'resume',
    }));
    events = await readSse(await api!.call(`/threads/${threadId}/decisions`, { json: { decisions } }));
  }
  expect(runEndOf(events).status).toBe('done');
}

const messagesOf = async (threadId: string) =>
  (await json<{ messages: MessageRecord[] }>(await api!.call(`/threads/${threadId}/messages`))).messages;
const checkpointsOf = async (threadId: string) =>
  (await json<{ checkpoints: ThreadStepCheckpoint[] }>(await api!.call(`/threads/${threadId}/checkpoints`)))
    .checkpoints;
/** A thread's checkpoints without `at` (a fork's copies are committed when it is made). */
const stepsOf = async (threadId: string) =>
  (await checkpointsOf(threadId)).map(({ at: _at, ...step }) => step);

describe('time travel over HTTP: GET /threads/:id/checkpoints and POST /threads/:id/fork', () => {
  it('lists a step per checkpoint; a fork at step k holds the first k steps, runs edited input, and leaves the original as it was', async () => {
    api = await startApi(conversationModel());
    const { thread } = await json<{ thread: { id: string } }>(
      await api.call('/threads', { json: { metadata: { title: 'Reading' } } }),
      201,
    );
    await converse(thread.id, 'read a.txt');
    await converse(thread.id, 'thanks');
    const checkpoints = await checkpointsOf(thread.id);
    expect(
      checkpoints.map(({ checkpoint, step, messageCount, complete, text, input, calls }) => ({
        checkpoint,
        step,
        messageCount,
        complete,
        text,
        input,
        calls,
      })),
    ).toEqual([
      {
        checkpoint: 1,
        step: 1,
        messageCount: 3,
        complete: true,
        text: '',
        input: 'read a.txt',
        calls: [{ toolCallId: 'call_1_1', toolName: 'read_file', answered: true }],
      },
      {
        checkpoint: 2,
        step: 2,
        messageCount: 4,
        complete: true,
        text: 'It says: contents of a.txt',
        calls: [],
      },
      {
        checkpoint: 3,
        step: 1,
        messageCount: 6,
        complete: true,
        text: 'You said: thanks',
        input: 'thanks',
        calls: [],
      },
    ]);
    const originalMessages = await messagesOf(thread.id);

    // Fork at step 1: the copied history; nothing runs.
    const forked = await json<{
      threadId: string;
      thread: { metadata: Record<string, unknown> };
      runId: null;
      settled: [];
    }>(await api.call(`/threads/${thread.id}/fork`, { json: { checkpoint: 1 } }), 201);
    expect(forked).toMatchObject({
      runId: null,
      settled: [],
      messageCount: 3,
      checkpoint: { checkpoint: 1 },
      thread: {
        metadata: { title: 'Reading', forkedFrom: { threadId: thread.id, checkpoint: 1, messageCount: 3 } },
      },
    });
    expect((await messagesOf(forked.threadId)).map((record) => record.message)).toEqual(
      originalMessages.slice(0, 3).map((record) => record.message),
    );
    expect(await stepsOf(forked.threadId)).toEqual((await stepsOf(thread.id)).slice(0, 1));

    // Fork at step 2 with edited input (instead of "thanks"): its run starts at once; follow it by id.
    const edited = await json<{ threadId: string; runId: string }>(
      await api.call(`/threads/${thread.id}/fork`, { json: { checkpoint: 2, input: 'no thanks' } }),
      201,
    );
    const events = await readSse(await api.call(`/threads/${edited.threadId}/runs/${edited.runId}/events`));
    expect(runEndOf(events)).toMatchObject({ status: 'done', identity: { runId: edited.runId } });
    const editedSteps = await stepsOf(edited.threadId);
    expect(editedSteps.slice(0, 2)).toEqual((await stepsOf(thread.id)).slice(0, 2));
    expect(editedSteps.slice(2).map((step) => [step.runId, step.input, step.text])).toEqual([
      [edited.runId, 'no thanks', 'You said: no thanks'],
    ]);
    // The read ran once, in the original; the original is unchanged.
    expect(reads).toEqual(['a.txt']);
    expect(await messagesOf(thread.id)).toEqual(originalMessages);
    expect(await checkpointsOf(thread.id)).toEqual(checkpoints);
  });

  it("settles a waiting step's open call in the fork (it never runs there); the original still waits", async () => {
    api = await startApi(conversationModel());
    const { thread } = await json<{ thread: { id: string } }>(await api.call('/threads', { json: {} }), 201);
    const events = await readSse(
      await api.call(`/threads/${thread.id}/messages`, { json: { text: 'read b.txt' } }),
    );
    expect(runEndOf(events).status).toBe('waiting');
    expect((await checkpointsOf(thread.id))[0]).toMatchObject({ complete: false });
    const fork = await json<{ threadId: string; settled: unknown[] }>(
      await api.call(`/threads/${thread.id}/fork`, { json: { checkpoint: 1 } }),
      201,
    );
    expect(fork.settled).toEqual([{ toolCallId: 'call_1_1', toolName: 'read_file', outcome: 'not-run' }]);
    // The chat history shows the call as not run (denied), and the fork goes on from there.
    const chat = await json<{ messages: Array<{ parts: Array<{ type: string; state?: string }> }> }>(
      await api.call(`/chat/${fork.threadId}/messages`),
    );
    expect(chat.messages[1]!.parts.filter((part) => part.type === 'tool-read_file')).toMatchObject([
      { state: 'output-denied' },
    ]);
    await converse(fork.threadId, 'never mind');
    expect(reads).toEqual([]);
    const original = await json<{ latestRun: { status: string } }>(await api.call(`/threads/${thread.id}`));
    expect(original.latestRun.status).toBe('waiting');
  });

  it("runs a waiting step's open call again only when asked (openCalls: 'rerun', continue): as the fork's, its approval asked again", async () => {
    api = await startApi(conversationModel());
    const { thread } = await json<{ thread: { id: string } }>(await api.call('/threads', { json: {} }), 201);
    const events = await readSse(
      await api.call(`/threads/${thread.id}/messages`, { json: { text: 'read c.txt' } }),
    );
    expect(runEndOf(events).status).toBe('waiting');
    const originalMessages = await messagesOf(thread.id);
    // Running them again continues the step's run: without continue, refused (400), and no fork is made.
    const refused = await api.call(`/threads/${thread.id}/fork`, {
      json: { checkpoint: 1, openCalls: 'rerun' },
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { code: 'invalid-argument' } });
    expect((await json<{ threads: unknown[] }>(await api.call('/threads'))).threads).toHaveLength(1);
    const fork = await json<{
      threadId: string;
      runId: string;
      settled: unknown[];
      rerun: unknown[];
      messageCount: number;
    }>(
      await api.call(`/threads/${thread.id}/fork`, {
        json: { checkpoint: 1, openCalls: 'rerun', continue: true },
      }),
      201,
    );
    expect(fork).toMatchObject({
      settled: [],
      rerun: [{ toolCallId: 'call_1_1', toolName: 'read_file', answered: false }],
      messageCount: 2,
    });
    expect(fork.runId).toEqual(expect.any(String));
    // The fork's run continues the step: its open call goes through the gate again, asking for approval.
    const continued = await readSse(await api.call(`/threads/${fork.threadId}/runs/${fork.runId}/events`));
    expect(runEndOf(continued)).toMatchObject({
      status: 'waiting',
      identity: { runId: fork.runId },
      openTickets: [{ toolName: 'read_file' }],
    });
    expect(reads).toEqual([]);
    const decisions = runEndOf(continued).openTickets.map((ticket) => ({
      ticketId: ticket.id,
      action: 'resume',
    }));
    const resumed = await readSse(
      await api.call(`/threads/${fork.threadId}/decisions`, { json: { decisions } }),
    );
    expect(runEndOf(resumed).status).toBe('done');
    // It ran once, in the fork; the original still waits, unchanged.
    expect(reads).toEqual(['c.txt']);
    expect((await messagesOf(fork.threadId)).at(-1)?.message).toMatchObject({
      role: 'assistant',
      content: [{ type: 'text', text: 'It says: contents of c.txt' }],
    });
    expect(await messagesOf(thread.id)).toEqual(originalMessages);
    const original = await json<{ latestRun: { status: string } }>(await api.call(`/threads/${thread.id}`));
    expect(original.latestRun.status).toBe('waiting');
  });

  it('continues the run of a complete step without input (continue: true): the model answers the copied history again', async () => {
    const model = conversationModel();
    api = await startApi(model);
    const calls = () => model.requests.length;
    const { thread } = await json<{ thread: { id: string } }>(await api.call('/threads', { json: {} }), 201);
    await converse(thread.id, 'hello');
    expect(calls()).toBe(1);
    // Step 1 is the run's only step: its run, continued in the fork, calls the model again from there.
    const fork = await json<{ threadId: string; runId: string; rerun: unknown[] }>(
      await api.call(`/threads/${thread.id}/fork`, { json: { checkpoint: 1, continue: true } }),
      201,
    );
    expect(fork.rerun).toEqual([]);
    const continued = await readSse(await api.call(`/threads/${fork.threadId}/runs/${fork.runId}/events`));
    expect(runEndOf(continued)).toMatchObject({ status: 'done', identity: { runId: fork.runId } });
    expect(calls()).toBe(2);
    const steps = await stepsOf(fork.threadId);
    expect(steps.map((step) => [step.checkpoint, step.runId === fork.runId, step.step])).toEqual([
      [1, false, 1],
      [2, true, 2],
    ]);
  });

  it("refuses another tenant's thread (404), a checkpoint the thread does not have and a malformed body (400)", async () => {
    api = await startApi(conversationModel());
    const { thread } = await json<{ thread: { id: string } }>(await api.call('/threads', { json: {} }), 201);
    await converse(thread.id, 'hello');
    expect((await api.call(`/threads/${thread.id}/checkpoints`, { token: BOB })).status).toBe(404);
    expect(
      (await api.call(`/threads/${thread.id}/fork`, { token: BOB, json: { checkpoint: 0 } })).status,
    ).toBe(404);
    for (const body of [
      { checkpoint: 2 },
      { checkpoint: -1 },
      { checkpoint: 1.5 },
      {},
      { checkpoint: 1, extra: true },
      { checkpoint: 1, openCalls: 'maybe' },
      { checkpoint: 1, continue: 'yes' },
      { checkpoint: 1, continue: true, input: 'both' },
      // No run to continue before the first message.
      { checkpoint: 0, continue: true },
    ]) {
      const response = await api.call(`/threads/${thread.id}/fork`, { json: body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: 'invalid-argument' } });
    }
    const threads = await json<{ threads: unknown[] }>(await api.call('/threads'));
    expect(threads.threads).toHaveLength(1);
  });
});
