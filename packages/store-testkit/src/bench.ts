// `@lunation/store-testkit/bench`: the checkpoint-commit benchmark every store's `bench/commit-bench.ts` runs, so
// the stores are measured on the same step, the same way.
import type { LunationStore, Message, RunRecord } from '@lunation/contract';

/** What {@link measureCommits} needs of a store. */
export type CommitBenchStore = Pick<LunationStore, 'createThread' | 'acquireLease' | 'commit'>;

/** How many steps {@link measureCommits} commits. */
export interface CommitBenchOptions {
  /** Steps committed before timing starts. */
  warmupSteps: number;
  /** Timed batches; the figures are per-step averages of each batch. */
  batches: number;
  /** Steps per timed batch. */
  batchSize: number;
}

/** Per-step commit latency in microseconds, over the timed batches. */
export interface CommitBenchResult {
  meanMicros: number;
  medianMicros: number;
  bestBatchMicros: number;
  worstBatchMicros: number;
  /** Every step committed, warm-up included. */
  steps: number;
}

/**
 * Commits one agent step at a time (an assistant message with a tool call, the tool result, the run record and
 * the thread state) to a new thread `bench`, and times the batches after the warm-up.
 */
export async function measureCommits(
  store: CommitBenchStore,
  { warmupSteps, batches, batchSize }: CommitBenchOptions,
): Promise<CommitBenchResult> {
  await store.createThread({ id: 'bench' });
  const lease = await store.acquireLease({
    threadId: 'bench',
    owner: 'bench',
    runId: 'run-1',
    ttlMs: 600_000,
  });
  const now = Date.now();
  const run: RunRecord = {
    identity: { threadId: 'bench', runId: 'run-1', agentId: 'assistant', origin: 'user' },
    status: 'running',
    steps: 0,
    usage: {
      inputTokens: 1200,
      outputTokens: 80,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    },
    openTickets: [],
    state: { plan: ['search', 'answer'] },
    createdAt: now,
    updatedAt: now,
  };
  let messageCount = 0;
  const step = async (index: number) => {
    const result = await store.commit({
      threadId: 'bench',
      expectedMessageCount: messageCount,
      leaseToken: lease.token,
      messages: stepMessages(index),
      run: { ...run, steps: index, updatedAt: Date.now() },
      threadState: { lastTool: 'search', step: index },
    });
    messageCount = result.messageCount;
  };

  let index = 0;
  for (; index < warmupSteps; index++) await step(index);
  const perStep: number[] = [];
  for (let batch = 0; batch < batches; batch++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < batchSize; i++) await step(index++);
    perStep.push(Number(process.hrtime.bigint() - started) / batchSize / 1000);
  }
  const mean = perStep.reduce((sum, micros) => sum + micros, 0) / perStep.length;
  perStep.sort((a, b) => a - b);
  return {
    meanMicros: mean,
    medianMicros: perStep[Math.floor(perStep.length / 2)]!,
    bestBatchMicros: perStep[0]!,
    worstBatchMicros: perStep.at(-1)!,
    steps: index,
  };
}

/** One line: `<label>: mean … µs per step, median … µs, best batch … µs, worst … µs (N steps)`. */
export function formatCommitResult(label: string, result: CommitBenchResult): string {
  return (
    `${label}: mean ${result.meanMicros.toFixed(1)} µs per step, median ${result.medianMicros.toFixed(1)} µs, ` +
    `best batch ${result.bestBatchMicros.toFixed(1)} µs, worst ${result.worstBatchMicros.toFixed(1)} µs ` +
    `(${result.steps} steps)`
  );
}

function stepMessages(index: number): Message[] {
  return [
    {
      id: `assistant-${index}`,
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me look that up for you. '.repeat(4) },
        {
          type: 'tool-call',
          toolCallId: `call-${index}`,
          toolName: 'search',
          arguments: '{"query":"weather"}',
        },
      ],
    },
    {
      id: `tool-${index}`,
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: `call-${index}`,
          toolName: 'search',
          result: { status: 'success', data: { results: ['sunny', '21°C'] } },
        },
      ],
    },
  ];
}
