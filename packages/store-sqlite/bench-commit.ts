import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from './src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'lunation-bench-'));
const store = await SqliteStore.open({ path: join(dir, 'bench.db'), synchronous: (process.env.SYNC as 'full') ?? 'normal' });
console.log('version', await store.schemaVersion());
await store.createThread({ id: 't1' });
const lease = await store.acquireLease({ threadId: 't1', owner: 'bench', runId: 'r1', ttlMs: 60_000 });
const now = Date.now();
const run = { identity: { threadId: 't1', runId: 'r1', agentId: 'a', origin: 'user' as const }, status: 'running' as const, steps: 0,
  usage: { inputTokens: 10, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }, openTickets: [], state: { counter: 1 }, createdAt: now, updatedAt: now };
let count = 0;
async function step(i: number) {
  const result = await store.commit({
    threadId: 't1', expectedMessageCount: count, leaseToken: lease.token,
    messages: [
      { id: `a${i}`, role: 'assistant', content: [{ type: 'text', text: 'hello '.repeat(40) }, { type: 'tool-call', toolCallId: `c${i}`, toolName: 'search', arguments: '{"q":"x"}' }] },
      { id: `t${i}`, role: 'tool', content: [{ type: 'tool-result', toolCallId: `c${i}`, toolName: 'search', result: { status: 'success', data: { items: [1, 2, 3] } } }] },
    ],
    run: { ...run, steps: i, updatedAt: Date.now() },
    threadState: { memory: { facts: ['a', 'b'], step: i } },
  });
  count = result.messageCount;
}
for (let i = 0; i < 2000; i++) await step(i);
const n = Number(process.env.N ?? 20000);
const t = process.hrtime.bigint();
for (let i = 0; i < n; i++) await step(2000 + i);
const perStep = Number(process.hrtime.bigint() - t) / n / 1000;
console.log(`commit: ${perStep.toFixed(1)} µs per step (2 messages + run + thread state, ${n} steps, synchronous=${process.env.SYNC ?? 'normal'})`);
const t2 = process.hrtime.bigint();
for (let i = 0; i < 2000; i++) await store.getLease('t1');
console.log(`getLease: ${(Number(process.hrtime.bigint() - t2) / 2000 / 1000).toFixed(1)} µs`);
const t3 = process.hrtime.bigint();
const cp = await store.loadCheckpoint('t1');
console.log(`loadCheckpoint of ${cp?.messages.length} messages: ${(Number(process.hrtime.bigint() - t3) / 1e6).toFixed(1)} ms`);
await store.close();
