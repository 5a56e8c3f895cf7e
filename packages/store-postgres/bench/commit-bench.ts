// Checkpoint commit latency against a real PostgreSQL (POSTGRES_URL, default the test database): one agent step
// (an assistant message with a tool call, the tool result, the run record and the thread state), one statement
// per step. Prints the median of 20 batches of 100 steps, with the server's default synchronous_commit and off.
// Run: node --conditions=@lunation/source --import tsx packages/store-postgres/bench/commit-bench.ts
import { randomBytes } from 'node:crypto';
import type { Message, RunRecord } from '@lunation/contract';
import { PostgresStore } from '../src/index.js';

const url = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const variants = {
  default: url,
  'synchronous_commit off': `${url}${url.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c synchronous_commit=off')}`,
};

async function measure(name: string, connectionString: string): Promise<void> {
  const schema = `lunation_bench_${randomBytes(4).toString('hex')}`;
  const store = await PostgresStore.open({ connectionString, schema, maxConnections: 1 });
  try {
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
      const messages: Message[] = [
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
      const result = await store.commit({
        threadId: 'bench',
        expectedMessageCount: messageCount,
        leaseToken: lease.token,
        messages,
        run: { ...run, steps: index, updatedAt: Date.now() },
        threadState: { lastTool: 'search', step: index },
      });
      messageCount = result.messageCount;
    };
    let index = 0;
    for (; index < 300; index++) await step(index);
    const batches: number[] = [];
    for (let batch = 0; batch < 20; batch++) {
      const started = process.hrtime.bigint();
      for (let i = 0; i < 100; i++) await step(index++);
      batches.push(Number(process.hrtime.bigint() - started) / 100 / 1000);
    }
    batches.sort((a, b) => a - b);
    console.log(
      `PostgresStore.commit (${name}): median ${batches[10]!.toFixed(1)} µs per step, ` +
        `best batch ${batches[0]!.toFixed(1)} µs, worst ${batches.at(-1)!.toFixed(1)} µs (${index} steps)`,
    );
  } finally {
    await store.dropSchema();
  }
}

for (const [name, connectionString] of Object.entries(variants)) await measure(name, connectionString);
