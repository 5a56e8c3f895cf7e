import {
  emptyUsage,
  type JsonObject,
  type LunationStore,
  type Message,
  type ToolCallPart,
  toolCallIdentity,
} from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { createRuntime, defineTool, permissionPlugin } from '../src/index.js';
import { RUN_JOURNAL_KEY, runJournalOf } from '../src/internal.js';
import { RUN_JOURNAL_LIMIT } from '../src/loop/run-journal-reader.js';
import { callTool, reply, ScriptedModel } from '../src/testing/index.js';
import { processOn } from './loop/loop-processes.js';

const readFile = defineTool({
  name: 'read_file',
  description: 'Reads a file',
  input: z.object({ path: z.string() }),
  execute: ({ path }) => `contents of ${path}`,
});

function runtimeOn(store: LunationStore, model: ScriptedModel, owner: string) {
  return createRuntime()
    .model('m', model)
    .agent({
      id: 'a',
      model: 'm',
      tools: [readFile],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'read_*', decision: 'ask' }] } }],
    })
    .store(store)
    .options({ owner })
    .build();
}

describe('the run journal', () => {
  it('records each step with its lease token and runner, a suspension and a resume elsewhere', async () => {
    const store = new MemoryStore();
    const model = new ScriptedModel([callTool('read_file', { path: 'a.txt' }), reply('It says hello.')]);
    const thread = await store.createThread({ id: 't1' });
    const first = runtimeOn(store, model, 'process-a');
    const run = await first.run({ threadId: thread.id, input: 'read a.txt' });
    const suspended = await run.result;
    expect(suspended.status).toBe('waiting');

    const second = runtimeOn(store, model, 'process-b');
    const ticket = suspended.openTickets[0]!;
    const outcome = await second.sendDecisions(thread.id, [
      { decisionId: 'd', ticketId: ticket.id, action: 'resume' },
    ]);
    await outcome.run?.result;

    const record = await store.getRun(run.runId);
    const journal = runJournalOf(record!, await store.listMessages(thread.id));
    expect(journal.map((entry) => [entry.event, entry.step, entry.owner])).toEqual([
      ['step', 1, 'process-a'],
      ['suspended', 1, 'process-a'],
      ['resumed', 1, 'process-b'],
      ['step', 2, 'process-b'],
      ['ended', 2, 'process-b'],
    ]);
    expect(journal[0]).toMatchObject({ token: expect.any(Number), modelMs: expect.any(Number) });
    expect(journal[0]?.usage).toBeDefined();
    expect(journal[1]?.tickets).toEqual([ticket.id]);
    expect(journal[4]?.termination).toBe('natural-end');
    // A resume takes the lease again: a new token, a new runner instance.
    expect(journal[2]?.token).toBeGreaterThan(journal[0]!.token!);
    expect(journal[2]?.incarnation).not.toBe(journal[0]?.incarnation);
    // The journal is the run record's, never the thread's state.
    expect(await store.getThreadState(thread.id)).not.toHaveProperty(RUN_JOURNAL_KEY);
  });

  it('keeps step facts in the step messages and each runner once in the record; runJournalOf puts them together', async () => {
    const store = new MemoryStore();
    const usage = { usage: { inputTokens: 10, outputTokens: 5 } };
    const model = new ScriptedModel([
      callTool('read_file', { path: 'a.txt' }, usage),
      reply('It says hello.', usage),
    ]);
    await store.createThread({ id: 't3' });
    const run = await runtimeOn(store, model, 'process-a').run({ threadId: 't3', input: 'read a.txt' });
    const ticket = (await run.result).openTickets[0]!;
    const outcome = await runtimeOn(store, model, 'process-b').sendDecisions('t3', [
      { decisionId: 'd', ticketId: ticket.id, action: 'resume' },
    ]);
    await outcome.run?.result;

    const record = (await store.getRun(run.runId))!;
    const stored = record.state[RUN_JOURNAL_KEY] as Record<string, unknown>[];
    // The record: each runner (from the thread position it took over at) and the lifecycle, no steps.
    expect(stored.map((item) => item.event ?? item.owner)).toEqual([
      'process-a',
      'suspended',
      'process-b',
      'resumed',
      'ended',
    ]);
    expect(stored.filter((item) => 'token' in item || 'incarnation' in item)).toHaveLength(2);
    // The steps: their assistant messages, with the model call's start, latency and usage (no runner, no token).
    const messages = await store.listMessages('t3');
    const answers = messages.filter((stored) => stored.message.role === 'assistant');
    expect(answers.map((stored) => stored.message.metadata)).toEqual([
      expect.objectContaining({ step: 1, inferredAt: expect.any(Number), modelMs: expect.any(Number) }),
      expect.objectContaining({ step: 2, inferredAt: expect.any(Number), modelMs: expect.any(Number) }),
    ]);
    // Usage without its zero counts (runJournalOf restores them).
    expect(answers[0]?.message.metadata?.usage).toEqual({ inputTokens: 10, outputTokens: 5 });
    const written = JSON.stringify(messages.map((stored) => stored.message));
    for (const runner of stored.slice(0, 3).filter((item) => item.owner !== undefined)) {
      expect(written).not.toContain(String(runner.owner));
      expect(written).not.toContain(String(runner.incarnation));
    }
    expect(written).not.toMatch(/"(token|owner|incarnation|leaseToken)"/);

    const journal = runJournalOf(record, messages);
    expect(journal.map((entry) => [entry.owner, entry.token, entry.incarnation])).toEqual([
      ...Array.from({ length: 2 }, () => ['process-a', stored[0]?.token, stored[0]?.incarnation]),
      ...Array.from({ length: 3 }, () => ['process-b', stored[2]?.token, stored[2]?.incarnation]),
    ]);
    expect(journal[0]?.usage).toEqual({
      inputTokens: 10,
      outputTokens: 5,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    });
    expect(journal[0]?.calls).toEqual([toolCallIdentity(answers[0]?.message.content[0] as ToolCallPart)]);
  });

  it('reads a journal stored with every entry whole (as written before it was compact)', () => {
    const whole: JsonObject[] = [
      { event: 'step', at: 1, step: 1, owner: 'a', token: 3, incarnation: 'i1', modelMs: 2 },
      { event: 'ended', at: 2, step: 1, owner: 'b', token: 4, incarnation: 'i2', termination: 'natural-end' },
    ];
    expect(runJournalOf({ identity: { runId: 'r' }, state: { [RUN_JOURNAL_KEY]: whole } }, [])).toEqual(
      whole,
    );
  });

  it('keeps at most the last RUN_JOURNAL_LIMIT entries', async () => {
    const store = new MemoryStore();
    const steps = RUN_JOURNAL_LIMIT + 20;
    const noop = defineTool({
      name: 'noop',
      description: 'Does nothing',
      input: z.object({}),
      execute: () => 'ok',
    });
    const model = new ScriptedModel([
      ...Array.from({ length: steps }, () => callTool('noop', {})),
      reply('done'),
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [noop], maxRounds: steps + 5 })
      .store(store)
      .build();
    await store.createThread({ id: 't2' });
    const run = await runtime.run({ threadId: 't2', input: 'go' });
    expect((await run.result).status).toBe('done');
    const record = (await store.getRun(run.runId))!;
    const journal = runJournalOf(record, await store.listMessages('t2'));
    expect(journal).toHaveLength(RUN_JOURNAL_LIMIT);
    // The record holds the runner and the end, however many steps the run had.
    expect(record.state[RUN_JOURNAL_KEY]).toHaveLength(2);
    expect(new Set(journal.map((entry) => `${entry.owner}/${entry.incarnation}`)).size).toBe(1);
    expect(journal[0]?.owner).not.toBe('unknown');
    expect(journal.at(-1)).toMatchObject({ event: 'ended', step: steps + 1 });
    expect(journal.at(-2)).toMatchObject({ event: 'step', step: steps + 1 });
  });

  it('writes a run record of the same size at every step, however long the run', async () => {
    const store = new MemoryStore();
    const journals: string[] = [];
    const commit = store.commit.bind(store);
    store.commit = (input) => {
      if (input.run?.identity.threadId === 't5')
        journals.push(JSON.stringify(input.run.state[RUN_JOURNAL_KEY]));
      return commit(input);
    };
    const noop = defineTool({
      name: 'noop',
      description: 'Does nothing',
      input: z.object({}),
      execute: () => 'ok',
    });
    const model = new ScriptedModel([
      ...Array.from({ length: 11 }, () => callTool('noop', {})),
      reply('done'),
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [noop], maxRounds: 20 })
      .store(store)
      .build();
    await store.createThread({ id: 't5' });
    const run = await runtime.run({ threadId: 't5', input: 'go' });
    expect((await run.result).steps).toBe(12);
    // One record per step (its C2) and the end's: the journal in each step's is the same (the runner).
    expect(journals.length).toBeGreaterThanOrEqual(12);
    expect(new Set(journals.slice(0, -1)).size).toBe(1);
    expect(journals.at(-1)!.length).toBeLessThan(2 * journals[0]!.length);
    const journal = runJournalOf((await store.getRun(run.runId))!, await store.listMessages('t5'));
    expect(journal.map((entry) => `${entry.event} ${entry.step}`)).toEqual([
      ...Array.from({ length: 12 }, (_, index) => `step ${index + 1}`),
      'ended 12',
    ]);
  });

  it('shows a crashed process, the recovery and the steps of each, in order', async () => {
    const store = new MemoryStore();
    let started = 0;
    const dying = processOn(store);
    const work = defineTool({
      name: 'work',
      description: 'work',
      input: z.object({}),
      execute: async () => {
        if (++started === 1) {
          dying.crash();
          await new Promise(() => {});
        }
        return 'worked';
      },
    });
    const model = () =>
      new ScriptedModel((request) =>
        request.messages.some((message) => message.role === 'tool')
          ? reply('all done')
          : callTool('work', {}),
      );
    const build = (on: LunationStore, owner: string, scripted: ScriptedModel) =>
      createRuntime()
        .model('m', scripted)
        .agent({ id: 'a', model: 'm', tools: [work] })
        .store(on)
        .options({ owner, leaseTtlMs: 5_000 })
        .build();
    const run = await build(dying.store, 'host-a', model()).run({ threadId: 't6', input: 'go' });
    const deadline = Date.now() + 5_000;
    while (started === 0) {
      if (Date.now() > deadline) throw new Error('timed out waiting for the tool to start');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const outcome = await build(store, 'host-b', model()).resumeCutOffRuns();
    expect((await outcome.resumed[0]!.result).finalText).toBe('all done');

    const journal = runJournalOf((await store.getRun(run.runId))!, await store.listMessages('t6'));
    expect(journal.map((entry) => [entry.event, entry.step, entry.owner])).toEqual([
      ['step', 1, 'host-a'],
      ['recovered', 1, 'host-b'],
      ['step', 2, 'host-b'],
      ['ended', 2, 'host-b'],
    ]);
    expect(journal[1]!.token).toBeGreaterThan(journal[0]!.token!);
    expect(journal[0]?.calls).toHaveLength(1);
  });

  it('reads and continues a record written before steps moved into the messages', async () => {
    const store = new MemoryStore();
    await store.createThread({ id: 't7' });
    const runId = 'r-old';
    const call = (step: number): Message => ({
      id: `a${step}`,
      role: 'assistant',
      content: [
        {
          type: 'tool-call',
          toolCallId: `p${step}`,
          callId: `c${step}`,
          toolName: 'read_file',
          arguments: '{"path":"a"}',
        },
      ],
      metadata: { runId, agentId: 'a', step },
    });
    const result = (step: number): Message => ({
      id: `t${step}`,
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: `p${step}`,
          toolName: 'read_file',
          result: { status: 'success', data: 'a' },
        },
      ],
      metadata: { runId, step },
    });
    // As the previous version stored them: the runner on its first entry only, usage without zero counts.
    const compact: JsonObject[] = [
      {
        event: 'step',
        at: 1_000,
        step: 1,
        owner: 'old-host',
        token: 1,
        incarnation: 'i-old',
        modelMs: 7,
        usage: { inputTokens: 3 },
        calls: ['c1'],
      },
      { event: 'step', at: 1_100, step: 2, modelMs: 8, usage: { outputTokens: 4 }, calls: ['c2'] },
    ];
    await store.commit({
      threadId: 't7',
      expectedMessageCount: 0,
      messages: [
        { id: 'u', role: 'user', content: [{ type: 'text', text: 'go' }] },
        call(1),
        result(1),
        call(2),
        result(2),
      ],
      run: {
        identity: { threadId: 't7', runId, agentId: 'a', origin: 'user' },
        status: 'running',
        steps: 2,
        usage: emptyUsage(),
        openTickets: [],
        state: { [RUN_JOURNAL_KEY]: compact },
        createdAt: 900,
        updatedAt: 1_200,
      },
    });
    const old = { owner: 'old-host', token: 1, incarnation: 'i-old' };
    const zero = emptyUsage();
    const before = [
      {
        event: 'step',
        at: 1_000,
        step: 1,
        ...old,
        modelMs: 7,
        usage: { ...zero, inputTokens: 3 },
        calls: ['c1'],
      },
      {
        event: 'step',
        at: 1_100,
        step: 2,
        ...old,
        modelMs: 8,
        usage: { ...zero, outputTokens: 4 },
        calls: ['c2'],
      },
    ];
    expect(runJournalOf((await store.getRun(runId))!, await store.listMessages('t7'))).toEqual(before);

    const outcome = await runtimeOn(store, new ScriptedModel([reply('done')]), 'new-host').resumeCutOffRuns();
    expect((await outcome.resumed[0]!.result).status).toBe('done');
    const journal = runJournalOf((await store.getRun(runId))!, await store.listMessages('t7'));
    expect(journal.slice(0, 2)).toEqual(before);
    expect(journal.slice(2).map((entry) => [entry.event, entry.step, entry.owner])).toEqual([
      ['recovered', 2, 'new-host'],
      ['step', 3, 'new-host'],
      ['ended', 3, 'new-host'],
    ]);
    expect(journal[2]?.token).toBeGreaterThan(1);
  });

  it('keeps in the record a model call whose answer never joined the thread (cancelled as it came)', async () => {
    const store = new MemoryStore();
    let cancel: (() => void) | undefined;
    const runtime = createRuntime()
      .model('m', new ScriptedModel([reply('too late', { usage: { inputTokens: 9 } })]))
      .agent({ id: 'a', model: 'm' })
      .store(store)
      .instrumentation({
        runStarted: () => ({
          modelCallStarted: () => ({ end: () => cancel?.() }),
          toolCallStarted: () => undefined,
          checkpointStarted: () => undefined,
          ledgerHit: () => {},
          toolCallSuspended: () => {},
          toolCallResumed: () => {},
          lease: () => {},
          suspendContext: () => undefined,
          runEnded: () => {},
        }),
      })
      .build();
    await store.createThread({ id: 't8' });
    const run = await runtime.run({ threadId: 't8', input: 'go' });
    cancel = () => run.cancel('stop');
    const result = await run.result;
    expect(result.termination).toMatchObject({ type: 'cancelled' });
    const messages = await store.listMessages('t8');
    expect(messages.map((stored) => stored.message.role)).toEqual(['user']);
    const journal = runJournalOf((await store.getRun(run.runId))!, messages);
    expect(journal.map((entry) => `${entry.event} ${entry.step}`)).toEqual(['step 1', 'ended 1']);
    expect(journal[0]?.usage?.inputTokens).toBe(9);
    expect(journal[0]?.modelMs).toBeGreaterThanOrEqual(0);
  });
});
