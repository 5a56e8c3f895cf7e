import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from './src/index.js';
const dir = mkdtempSync(join(tmpdir(), 'lunation-bench-'));
const store = await SqliteStore.open({ path: join(dir, 'bench.db') });
const now = Date.now();
const run = { identity: { threadId: 't1', runId: 'r1', agentId: 'a', origin: 'user' as const }, status: 'running' as const, steps: 0,
  usage: { inputTokens: 10, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }, openTickets: [], state: { counter: 1 }, createdAt: now, updatedAt: now };
const messages = (i: number) => [
  { id: `a${i}`, role: 'assistant' as const, content: [{ type: 'text' as const, text: 'hello '.repeat(40) }] },
  { id: `t${i}`, role: 'user' as const, content: [{ type: 'text' as const, text: 'ok' }] },
];
async function measure(label: string, id: string, parts: { messages?: boolean; run?: boolean; state?: boolean }) {
  await store.createThread({ id });
  let count = 0;
  const n = 10000;
  let t = 0n;
  for (let i = 0; i < n + 1000; i++) {
    if (i === 1000) t = process.hrtime.bigint();
    count = (await store.commit({ threadId: id, expectedMessageCount: count, messages: parts.messages ? messages(i) : [],
      ...(parts.run ? { run: { ...run, identity: { ...run.identity, threadId: id, runId: `${id}-r` }, steps: i } } : {}),
      ...(parts.state ? { threadState: { step: i } } : {}) })).messageCount;
  }
  console.log(label, (Number(process.hrtime.bigint() - t) / n / 1000).toFixed(1), 'µs');
}
await measure('empty commit', 'e', {});
await measure('messages only', 'm', { messages: true });
await measure('run only', 'r', { run: true });
await measure('state only', 's', { state: true });
await measure('all', 'a', { messages: true, run: true, state: true });
