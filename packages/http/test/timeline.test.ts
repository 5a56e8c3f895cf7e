import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyUsage, type RunRecord, type ToolExecution } from '@lunation/contract';
import { RUN_JOURNAL_KEY, type RunJournalEntry } from '@lunation/runtime/internal';
import { SqliteStore } from '@lunation/store-sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { buildTimeline } from '../src/index.js';

let cleanup: (() => Promise<void>) | undefined;

afterEach(async () => {
  await cleanup?.();
  cleanup = undefined;
});

async function sqliteStore(): Promise<SqliteStore> {
  const dir = await mkdtemp(join(tmpdir(), 'lunation-timeline-'));
  const store = new SqliteStore({ path: join(dir, 'threads.db') });
  cleanup = async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  };
  return store;
}

const A = { owner: 'host-a', incarnation: 'a-1' };
const B = { owner: 'host-a', incarnation: 'b-2' };

/** A completed ledger entry of run `r` on thread `t`. */
function completed(
  toolCallId: string,
  toolName: string,
  times: { startedAt: number; completedAt: number; attempts?: number },
): ToolExecution {
  return {
    runId: 'r',
    toolCallId,
    threadId: 't',
    toolName,
    idempotencyKey: `r:${toolCallId}`,
    status: 'completed',
    result: { status: 'success', data: 1 },
    attempts: times.attempts ?? 1,
    startedAt: times.startedAt,
    completedAt: times.completedAt,
  };
}

/** Run `r` of thread `t`, done after two steps, with `journal` in its state. */
function doneRun(journal: RunJournalEntry[], createdAt: number, updatedAt: number): RunRecord {
  return {
    identity: { threadId: 't', runId: 'r', agentId: 'a', origin: 'user' },
    status: 'done',
    termination: { type: 'natural-end' },
    steps: 2,
    usage: emptyUsage(),
    openTickets: [],
    state: { [RUN_JOURNAL_KEY]: journal as never },
    finalText: 'done',
    createdAt,
    updatedAt,
  };
}

describe('buildTimeline (from what a crash left in the store)', () => {
  it('marks a takeover, a call re-run after it and a result taken from the ledger', async () => {
    const store = await sqliteStore();
    await store.createThread({ id: 't' });
    // Process A ran step 1 (two calls) and died; process B took the run over at 1_500.
    const journal: RunJournalEntry[] = [
      {
        event: 'step',
        at: 1_000,
        step: 1,
        token: 1,
        ...A,
        modelMs: 20,
        usage: emptyUsage(),
        calls: ['c1', 'c2'],
      },
      { event: 'recovered', at: 1_500, step: 1, token: 2, ...B },
      { event: 'step', at: 1_700, step: 2, token: 2, ...B, modelMs: 10, usage: emptyUsage() },
      { event: 'ended', at: 1_800, step: 2, token: 2, ...B, termination: 'natural-end' },
    ];
    // c1 finished before the crash (its result came from the ledger); c2 was cut off and ran again.
    const ledger = [
      completed('c1', 'fetch', { startedAt: 1_050, completedAt: 1_100 }),
      {
        ...completed('c2', 'send', { startedAt: 1_100, completedAt: 1_600, attempts: 2 }),
        result: { status: 'success' as const, data: 2 },
      },
    ];
    const run = doneRun(journal, 900, 1_800);
    await store.commit({
      threadId: 't',
      expectedMessageCount: 0,
      messages: [
        { id: 'm1', role: 'user', content: [{ type: 'text', text: 'go' }] },
        {
          id: 'm2',
          role: 'assistant',
          content: [
            { type: 'tool-call', toolCallId: 'p1', callId: 'c1', toolName: 'fetch', arguments: '{}' },
            { type: 'tool-call', toolCallId: 'p2', callId: 'c2', toolName: 'send', arguments: '{}' },
          ],
        },
        {
          id: 'm3',
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'p1',
              toolName: 'fetch',
              result: { status: 'success', data: 1 },
            },
            {
              type: 'tool-result',
              toolCallId: 'p2',
              toolName: 'send',
              result: { status: 'success', data: 2 },
            },
          ],
        },
      ],
      run,
      toolExecutions: ledger,
    });

    const timeline = await buildTimeline(store, (await store.getRun('r'))!);
    const tools = timeline.entries.filter((entry) => entry.kind === 'tool');
    expect(
      tools.map((tool) => [tool.toolCallId, tool.step, tool.attempts, tool.rerun, tool.fromLedger]),
    ).toEqual([
      ['c1', 1, 1, false, true],
      ['c2', 1, 2, true, false],
    ]);
    const takeover = timeline.entries.find((entry) => entry.kind === 'lease-takeover');
    expect(takeover).toMatchObject({
      fromToken: 1,
      toToken: 2,
      from: { incarnation: 'a-1' },
      to: { incarnation: 'b-2' },
    });
    expect(
      timeline.entries.filter((entry) => entry.kind !== 'checkpoint').map((entry) => entry.kind),
    ).toEqual(['run-created', 'step', 'tool', 'tool', 'lease-takeover', 'recovered', 'step', 'run-ended']);
    expect(timeline.workers).toEqual([
      { owner: 'host-a', incarnation: 'a-1' },
      { owner: 'host-a', incarnation: 'b-2' },
    ]);
  });
  it('keeps the journal in its order when entries share a millisecond or a later process has an earlier clock', async () => {
    const store = await sqliteStore();
    await store.createThread({ id: 't' });
    // A fast model and an instant decision: step 1, its suspension, the resume and the gated call all at 1_000.
    // Process B, whose clock runs 300 ms behind A's, took the run over and made step 2.
    const journal: RunJournalEntry[] = [
      { event: 'step', at: 1_000, step: 1, token: 1, ...A, modelMs: 0, usage: emptyUsage(), calls: ['c1'] },
      { event: 'suspended', at: 1_000, step: 1, token: 1, ...A, tickets: ['k1'] },
      { event: 'resumed', at: 1_000, step: 1, token: 2, ...A },
      { event: 'recovered', at: 700, step: 1, token: 3, ...B },
      { event: 'step', at: 700, step: 2, token: 3, ...B, modelMs: 0, usage: emptyUsage() },
      { event: 'ended', at: 700, step: 2, token: 3, ...B, termination: 'natural-end' },
    ];
    const ledger = [completed('c1', 'send', { startedAt: 1_000, completedAt: 1_000 })];
    const run = doneRun(journal, 1_000, 1_000);
    await store.commit({ threadId: 't', expectedMessageCount: 0, messages: [], run, toolExecutions: ledger });

    const timeline = await buildTimeline(store, (await store.getRun('r'))!);
    expect(timeline.entries.map((entry) => [entry.kind, entry.at])).toEqual([
      ['run-created', 1_000],
      ['step', 1_000],
      ['suspended', 1_000],
      ['resumed', 1_000],
      ['lease-takeover', 700],
      ['recovered', 700],
      // Step 1's call, before step 2 whatever the clocks say (which process ran it, the ledger does not tell).
      ['tool', 1_000],
      ['step', 700],
      ['run-ended', 1_000],
    ]);
  });
});
