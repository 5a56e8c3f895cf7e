// Checkpoint commit latency on a file database: one agent step (an assistant message with a tool call, the
// tool result, the run record and the thread state). Prints the median of 40 batches of 250 steps.
// Run: node --conditions=@lunation/source --import tsx packages/store-sqlite/bench/commit-bench.ts
// SYNCHRONOUS=full fsyncs every commit; STORE=kysely runs the store on an injected Kysely instance;
// CHECKPOINT=inline checkpoints inside commits instead of on a background thread.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Message, RunRecord } from '@lunation/contract';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { SqliteStore } from '../src/index.js';

const synchronous = process.env.SYNCHRONOUS === 'full' ? 'full' : 'normal';
const checkpoint = process.env.CHECKPOINT === 'inline' ? 'inline' : 'background';
const directory = mkdtempSync(join(tmpdir(), 'lunation-sqlite-bench-'));
const path = join(directory, 'bench.db');
let database: Kysely<unknown> | undefined;
if (process.env.STORE === 'kysely') {
  const client = new Database(path);
  client.pragma('busy_timeout = 5000');
  client.pragma('journal_mode = WAL');
  client.pragma(`synchronous = ${synchronous}`);
  database = new Kysely<unknown>({ dialect: new SqliteDialect({ database: client }) });
}
const store = await SqliteStore.open(database ? { database } : { path, synchronous, checkpoint });
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
const mean = batches.reduce((sum, batch) => sum + batch, 0) / batches.length;
batches.sort((a, b) => a - b);
console.log(
  `SqliteStore.commit (${database ? 'kysely' : `checkpoint=${checkpoint}`}, synchronous=${synchronous}): ` +
    `mean ${mean.toFixed(1)} µs per step, median ${batches[20]!.toFixed(1)} µs, ` +
    `best batch ${batches[0]!.toFixed(1)} µs, worst ${batches.at(-1)!.toFixed(1)} µs (${index} steps)`,
);
await store.close();
await database?.destroy();
rmSync(directory, { recursive: true, force: true });
