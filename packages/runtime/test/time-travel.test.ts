import { LunationError, type LunationStore, type ModelRequest } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { createRuntime, defineTool, permissionPlugin, type ThreadStepCheckpoint } from '../src/index.js';
import { forkThread, listCheckpoints } from '../src/internal.js';
import { ScriptedModel, type ScriptedResponse } from '../src/testing/index.js';

/** The text of the last message of a request, and its role. */
function last(request: ModelRequest): { role: string; text: string } {
  const message = request.messages.at(-1)!;
  const text = message.content
    .map((part) =>
      part.type === 'text'
        ? part.text
        : part.type === 'tool-result'
          ? `${part.toolName}=${part.result.status}:${JSON.stringify(part.result.data ?? part.result.message)}`
          : '',
    )
    .join(' ');
  return { role: message.role, text };
}

/**
 * A model that answers from the conversation, not from a call count, so a fork and its original get the same
 * answer to the same history: "read <path>" adds first (calculator), then reads (read_file, approval asked),
 * then says what it read; "both <path>" makes both calls in one step; any other input is echoed.
 */
function conversationModel(): ScriptedModel {
  return new ScriptedModel((request): ScriptedResponse => {
    const { role, text } = last(request);
    if (role === 'user' && text.startsWith('read ')) {
      return { text: 'Adding first.', toolCalls: [{ toolName: 'calculator', arguments: { a: 1, b: 2 } }] };
    }
    if (role === 'user' && text.startsWith('both ')) {
      return {
        toolCalls: [
          { toolName: 'calculator', arguments: { a: 2, b: 3 } },
          { toolName: 'read_file', arguments: { path: text.slice(5) } },
        ],
      };
    }
    if (role === 'tool' && /^calculator=\S*$/.test(text)) {
      const path = request.messages
        .findLast((message) => message.role === 'user')!
        .content.map((part) => (part.type === 'text' ? part.text : ''))
        .join('')
        .slice(5);
      return { toolCalls: [{ toolName: 'read_file', arguments: { path } }] };
    }
    if (role === 'tool') return { text: `I saw: ${text}` };
    return { text: `You said: ${text}` };
  });
}

function setup(store: LunationStore = new MemoryStore()) {
  const reads: string[] = [];
  const sums: number[] = [];
  const readFile = defineTool({
    name: 'read_file',
    description: 'Reads a file',
    input: z.object({ path: z.string() }),
    execute: ({ path }) => {
      reads.push(path);
      return `contents of ${path}`;
    },
  });
  const calculator = defineTool({
    name: 'calculator',
    description: 'Adds',
    input: z.object({ a: z.number(), b: z.number() }),
    execute: ({ a, b }) => {
      sums.push(a + b);
      return a + b;
    },
  });
  const model = conversationModel();
  const runtime = createRuntime()
    .model('m', model)
    .agent({
      id: 'assistant',
      model: 'm',
      tools: [readFile, calculator],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'read_*', decision: 'ask' }] } }],
    })
    .store(store)
    .build();
  return { store, runtime, model, reads, sums };
}

type Setup = ReturnType<typeof setup>;

/** Runs `input` on the thread, approving every approval it asks for, to its end. */
async function runApproving({ runtime }: Setup, threadId: string, input: string | undefined): Promise<void> {
  let result = await (await runtime.run({ threadId, ...(input === undefined ? {} : { input }) })).result;
  while (result.status === 'waiting') {
    const outcome = await runtime.sendDecisions(
      { threadId },
      result.openTickets.map((ticket) => ({
        decisionId: `d-${ticket.id}`,
        ticketId: ticket.id,
        action: 'resume',
      })),
    );
    result = await outcome.run!.result;
  }
  expect(result.status).toBe('done');
}

/** Everything the store holds of a thread, to check that the original is unchanged. */
async function snapshot(store: LunationStore, threadId: string) {
  const runs = (await store.listRuns(threadId)).items;
  return {
    thread: await store.getThread(threadId),
    messages: await store.listMessages(threadId),
    state: await store.getThreadState(threadId),
    runs,
    ledger: await Promise.all(runs.map((run) => store.listToolExecutions(run.identity.runId))),
  };
}

/** What two threads' equal steps share (their timestamps and journal timings may differ). */
function stepsOf(checkpoints: ThreadStepCheckpoint[]) {
  return checkpoints.map(({ checkpoint, runId, step, messageCount, complete, text, calls, input }) => ({
    checkpoint,
    runId,
    step,
    messageCount,
    complete,
    text,
    calls,
    input,
  }));
}

describe('time travel: a thread checkpoint per step, and forks from any of them', () => {
  it('lists one checkpoint per step across runs, from the stored messages and the run journal', async () => {
    const world = setup();
    await world.store.createThread({ id: 't1' });
    await runApproving(world, 't1', 'read a.txt');
    await runApproving(world, 't1', 'hello again');
    const checkpoints = await world.runtime.checkpoints('t1');
    const runs = (await world.store.listRuns('t1')).items.map((run) => run.identity.runId);
    expect(stepsOf(checkpoints)).toEqual([
      {
        checkpoint: 1,
        runId: runs[0],
        step: 1,
        messageCount: 3,
        complete: true,
        text: 'Adding first.',
        calls: [{ toolCallId: 'call_1_1', toolName: 'calculator', answered: true }],
        input: 'read a.txt',
      },
      {
        checkpoint: 2,
        runId: runs[0],
        step: 2,
        messageCount: 5,
        complete: true,
        text: '',
        calls: [{ toolCallId: 'call_2_1', toolName: 'read_file', answered: true }],
        input: undefined,
      },
      {
        checkpoint: 3,
        runId: runs[0],
        step: 3,
        messageCount: 6,
        complete: true,
        text: 'I saw: read_file=success:"contents of a.txt"',
        calls: [],
        input: undefined,
      },
      {
        checkpoint: 4,
        runId: runs[1],
        step: 1,
        messageCount: 8,
        complete: true,
        text: 'You said: hello again',
        calls: [],
        input: 'hello again',
      },
    ]);
    // The journal's model timings and usage ride along.
    for (const checkpoint of checkpoints) {
      expect(checkpoint.modelMs).toBeGreaterThanOrEqual(0);
      expect(checkpoint.usage).toMatchObject({ inputTokens: 0, outputTokens: 0 });
    }
    expect(await world.runtime.checkpoints('missing')).toEqual([]);
  });

  it('forks at step k: the first k steps equal the original, the next run continues from there, the original is unchanged', async () => {
    const world = setup();
    await world.store.createThread({ id: 't1', resourceId: 'alice', metadata: { title: 'Files' } });
    await runApproving(world, 't1', 'read a.txt');
    await runApproving(world, 't1', 'hello again');
    const original = await world.runtime.checkpoints('t1');
    const before = await snapshot(world.store, 't1');
    const requestsBefore = world.model.requests.length;

    // Steps 1 and 2 of the first run: its step 3 called the model on what a fork's continued run calls it on.
    for (const k of [1, 2]) {
      const fork = await forkThread(world.store, 't1', { checkpoint: k, continueRun: true });
      expect(fork.thread).toMatchObject({
        resourceId: 'alice',
        metadata: {
          title: 'Files',
          forkedFrom: { threadId: 't1', checkpoint: k, messageCount: original[k - 1]!.messageCount },
        },
        messageCount: original[k - 1]!.messageCount,
      });
      expect(fork.settled).toEqual([]);
      const copied = await world.store.listMessages(fork.thread.id);
      const source = await world.store.listMessages('t1', { toSeq: original[k - 1]!.messageCount });
      expect(copied.map(({ message, runId, seq }) => ({ message, runId, seq }))).toEqual(
        source.map(({ message, runId, seq }) => ({ message, runId, seq })),
      );
      expect(stepsOf(await world.runtime.checkpoints(fork.thread.id))).toEqual(stepsOf(original.slice(0, k)));
      // The fork's run continues the checkpoint's: its next run (no new input) calls the model on the copied
      // history, which is what the original's step k+1 was called on.
      expect(
        (await world.store.listRuns(fork.thread.id)).items.map((run) => [
          run.identity.runId,
          run.status,
          run.steps,
        ]),
      ).toEqual([[fork.runId, 'running', original[k - 1]!.step]]);
      const requests = world.model.requests.length;
      await runApproving(world, fork.thread.id, undefined);
      const continued = world.model.requests[requests]!;

      expect(continued.messages).toEqual(copied.map((record) => record.message));
      expect(continued.messages).toEqual(world.model.requests[k]?.messages);
      expect(requests).toBeGreaterThanOrEqual(requestsBefore);
      const steps = await world.runtime.checkpoints(fork.thread.id);
      expect(stepsOf(steps.slice(0, k))).toEqual(stepsOf(original.slice(0, k)));
      // Its next steps are its own run's, and answer as the original's did (same history, same model).
      const own = steps.slice(k);
      expect(own.length).toBeGreaterThan(0);
      expect(new Set(own.map((step) => step.runId)).size).toBe(1);
      expect(own[0]!.runId).toBe(fork.runId);
      expect(own[0]!.step).toBe(original[k - 1]!.step + 1);
      expect(own.map((step) => step.text)).toEqual(original.slice(k, 3).map((step) => step.text));
    }
    // Forking and running the forks wrote nothing to the original.
    expect(await snapshot(world.store, 't1')).toEqual(before);
  });

  it("a fork's checkpoints keep the original's model timings and usage (its copies' metadata), even once the original is gone", async () => {
    const world = setup();
    await world.store.createThread({ id: 't1' });
    await runApproving(world, 't1', 'read a.txt');
    await runApproving(world, 't1', 'hello again');
    const original = await world.runtime.checkpoints('t1');
    const timings = (checkpoints: ThreadStepCheckpoint[]) =>
      checkpoints.map(({ modelMs, usage }) => ({ modelMs, usage }));
    expect(timings(original).every(({ modelMs }) => typeof modelMs === 'number')).toBe(true);
    const { thread } = await world.runtime.fork('t1', { checkpoint: 3 });
    expect(timings(await world.runtime.checkpoints(thread.id))).toEqual(timings(original).slice(0, 3));
    await world.store.deleteThread('t1');
    expect(timings(await world.runtime.checkpoints(thread.id))).toEqual(timings(original).slice(0, 3));
  });

  it('forks with edited input: from the checkpoint before a run, the fork runs the new input instead', async () => {
    const world = setup();
    await world.store.createThread({ id: 't1' });
    await runApproving(world, 't1', 'read a.txt');
    await runApproving(world, 't1', 'hello again');
    const before = await snapshot(world.store, 't1');
    // Checkpoint 3 ends the first run: the fork replaces "hello again" with the edited text.
    const fork = await world.runtime.fork('t1', { checkpoint: 3, input: 'goodbye instead' });
    expect((await fork.run!.result).finalText).toBe('You said: goodbye instead');
    const steps = await world.runtime.checkpoints(fork.thread.id);
    expect(steps.map((step) => [step.checkpoint, step.input, step.text])).toEqual([
      [1, 'read a.txt', 'Adding first.'],
      [2, undefined, ''],
      [3, undefined, 'I saw: read_file=success:"contents of a.txt"'],
      [4, 'goodbye instead', 'You said: goodbye instead'],
    ]);
    // Checkpoint 0: a fresh thread with the first message edited; nothing of the original is copied.
    const fresh = await world.runtime.fork('t1', { checkpoint: 0, input: 'hi' });
    expect((await fresh.run!.result).finalText).toBe('You said: hi');
    expect((await world.store.listMessages(fresh.thread.id)).map((record) => record.message.role)).toEqual([
      'user',
      'assistant',
    ]);
    expect(world.reads).toEqual(['a.txt']);
    expect(await snapshot(world.store, 't1')).toEqual(before);
  });

  it('never replays a recorded side effect: open calls of the step are settled from the ledger or not run', async () => {
    const world = setup();
    await world.store.createThread({ id: 't1' });
    // One step calls calculator (runs at once) and read_file (waits for approval).
    const waiting = await (await world.runtime.run({ threadId: 't1', input: 'both b.txt' })).result;
    expect(waiting.status).toBe('waiting');
    expect(world.sums).toEqual([5]);
    const [checkpoint] = await world.runtime.checkpoints('t1');
    expect(checkpoint).toMatchObject({
      checkpoint: 1,
      complete: false,
      calls: [
        { toolName: 'calculator', answered: false },
        { toolName: 'read_file', answered: false },
      ],
    });
    const before = await snapshot(world.store, 't1');

    const fork = await world.runtime.fork('t1', { checkpoint: 1 });
    expect(fork.settled).toEqual([
      { toolCallId: 'call_1_1', toolName: 'calculator', outcome: 'recorded' },
      { toolCallId: 'call_1_2', toolName: 'read_file', outcome: 'not-run' },
    ]);
    const settling = (await world.store.listMessages(fork.thread.id)).at(-1)!.message;
    expect(settling).toMatchObject({
      role: 'tool',
      content: [
        { toolName: 'calculator', result: { status: 'success', data: 5 } },
        { toolName: 'read_file', result: { status: 'error', metadata: { cancelled: true, forked: true } } },
      ],
    });
    expect((await world.runtime.checkpoints(fork.thread.id))[0]).toMatchObject({ complete: true });
    // The fork's next run answers from there: nothing runs again, nothing asks.
    const continued = await (await world.runtime.run({ threadId: fork.thread.id, input: 'go on' })).result;

    expect(continued.status).toBe('done');
    expect(continued.finalText).toBe('You said: go on');
    const seen = world.model.requests.at(-1)!.messages.map((message) => message.role);
    expect(seen.slice(-4)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(world.sums).toEqual([5]);
    expect(world.reads).toEqual([]);
    expect(await snapshot(world.store, 't1')).toEqual(before);

    // The original still waits, and its approval runs its read once.
    const outcome = await world.runtime.sendDecisions({ threadId: 't1' }, [
      { decisionId: 'd1', ticketId: waiting.openTickets[0]!.id, action: 'resume' },
    ]);
    expect((await outcome.run!.result).status).toBe('done');
    expect(world.reads).toEqual(['b.txt']);
    expect(world.sums).toEqual([5]);
  });

  it("replays the open calls only when asked (openCalls: 'rerun'): they run again as the fork's, through the gates", async () => {
    const world = setup();
    await world.store.createThread({ id: 't1' });
    await (await world.runtime.run({ threadId: 't1', input: 'both c.txt' })).result;
    expect(
      await forkThread(world.store, 't1', { checkpoint: 1, openCalls: 'rerun' }).catch((error: unknown) =>
        LunationError.isInstance(error) ? error.code : error,
      ),
    ).toBe('invalid-argument');
    const fork = await world.runtime.fork('t1', { checkpoint: 1, openCalls: 'rerun', continue: true });
    expect(fork.settled).toEqual([]);
    expect(fork.rerun).toEqual([
      { toolCallId: 'call_1_1', toolName: 'calculator', answered: false },
      { toolCallId: 'call_1_2', toolName: 'read_file', answered: false },
    ]);
    expect(fork.messageCount).toBe(2);
    // The approval is asked again, in the fork; approved, both calls run (the calculator a second time).
    let result = await fork.run!.result;
    expect(result.status).toBe('waiting');
    expect(result.openTickets.map((ticket) => ticket.toolName)).toEqual(['read_file']);
    result = await (
      await world.runtime.sendDecisions({ threadId: fork.thread.id }, [
        { decisionId: 'd-fork', ticketId: result.openTickets[0]!.id, action: 'resume' },
      ])
    ).run!.result;
    expect(result.status).toBe('done');
    expect(world.sums).toEqual([5, 5]);
    expect(world.reads).toEqual(['c.txt']);
    const forkRuns = (await world.store.listRuns(fork.thread.id)).items;
    expect(forkRuns).toHaveLength(1);
    const ledger = await world.store.listToolExecutions(forkRuns[0]!.identity.runId);
    expect(ledger.map((entry) => [entry.toolName, entry.status, entry.threadId])).toEqual([
      ['calculator', 'completed', fork.thread.id],
      ['read_file', 'completed', fork.thread.id],
    ]);
    expect((await world.store.getLatestRun('t1'))?.status).toBe('waiting');
  });

  it('refuses a checkpoint the thread does not have, a missing thread and a taken id; the fork is whole or absent', async () => {
    const world = setup();
    await world.store.createThread({ id: 't1' });
    await runApproving(world, 't1', 'hello');
    const code = (promise: Promise<unknown>) =>
      promise.then(
        () => 'resolved',
        (error: unknown) => (LunationError.isInstance(error) ? error.code : String(error)),
      );
    for (const checkpoint of [2, -1, 0.5, Number.NaN]) {
      expect(await code(forkThread(world.store, 't1', { checkpoint }))).toBe('invalid-argument');
    }
    expect(await code(forkThread(world.store, 'missing', { checkpoint: 0 }))).toBe('not-found');
    expect(await code(forkThread(world.store, 't1', { checkpoint: 1, threadId: 't1' }))).toBe(
      'store-conflict',
    );
    expect((await world.store.listThreads()).items.map((thread) => thread.id)).toEqual(['t1']);
    const storeless = createRuntime().model('m', conversationModel()).agent({ id: 'a', model: 'm' }).build();
    expect(await code(storeless.fork('t1', { checkpoint: 0 }))).toBe('invalid-argument');
    expect(await code(storeless.checkpoints('t1'))).toBe('invalid-argument');
    expect(await listCheckpoints(world.store, 't1')).toHaveLength(1);
  });

  it("keeps the original's thread state, without its call records, decisions and tasks; or the state given", async () => {
    const world = setup();
    await world.store.createThread({ id: 't1' });
    await runApproving(world, 't1', 'read d.txt');
    const state = await world.store.getThreadState('t1');
    expect(Object.keys(state)).toContain('runtime.appliedDecisions');
    const fork = await world.runtime.fork('t1', { checkpoint: 3 });
    const forked = await world.store.getThreadState(fork.thread.id);
    expect(forked).not.toHaveProperty('runtime.appliedDecisions');
    expect(forked).not.toHaveProperty('runtime.toolCalls');
    const edited = await world.runtime.fork('t1', { checkpoint: 3, threadState: { note: 'edited' } });
    expect(await world.store.getThreadState(edited.thread.id)).toEqual({ note: 'edited' });
  });
});
