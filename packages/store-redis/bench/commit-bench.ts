// Checkpoint commit latency against a real Redis (REDIS_URL, default localhost): one agent step (an assistant
// message with a tool call, the tool result, the run record and the thread state), one EVALSHA per step.
// Prints the median of 40 batches of 250 steps.
// Run: node --conditions=@lunation/source --import tsx packages/store-redis/bench/commit-bench.ts
import { randomBytes } from 'node:crypto';
import type { Message, RunRecord } from '@lunation/contract';
import { Redis } from 'ioredis';
import { RedisStore } from '../src/index.js';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const keyPrefix = `lunation-bench:${randomBytes(4).toString('hex')}:`;
const store = new RedisStore({ url, keyPrefix });
await store.createThread({ id: 'bench' });
const lease = await store.acquireLease({ threadId: 'bench', owner: 'bench', runId: 'run-1', ttlMs: 600_000 });
const now = Date.now();
const run: RunRecord = {
  identity: { threadId: 'bench', runId: 'run-1', agentId: 'assistant', origin: 'user' },
  status: 'running',
  steps: 0,
  usage: { inputTokens: 1200, outputTokens: 80, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
  openTickets: [],
  state: { plan: ['search', 'answer'] },
  createdAt: now,
  updatedAt: now,
};

let messageCount = 0;
async function step(index: number): Promise<void> {
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
}

let index = 0;
for (; index < 1000; index++) await step(index);
const batches: number[] = [];
for (let batch = 0; batch < 40; batch++) {
  const started = process.hrtime.bigint();
  for (let i = 0; i < 250; i++) await step(index++);
  batches.push(Number(process.hrtime.bigint() - started) / 250 / 1000);
}
batches.sort((a, b) => a - b);
console.log(
  `RedisStore.commit: median ${batches[20]!.toFixed(1)} µs per step, ` +
    `best batch ${batches[0]!.toFixed(1)} µs, worst ${batches.at(-1)!.toFixed(1)} µs (${index} steps)`,
);
await store.close();
const admin = new Redis(url);
let cursor = '0';
do {
  const [next, keys] = await admin.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000);
  if (keys.length > 0) await admin.del(...keys);
  cursor = next;
} while (cursor !== '0');
admin.disconnect();
