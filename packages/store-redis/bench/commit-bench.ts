// Checkpoint commit latency against a real Redis (REDIS_URL, default localhost), measured by
// `@lunation/store-testkit/bench` (one agent step per commit, one EVALSHA per step). Prints the figures of 40
// batches of 250 steps.
// Run: node --conditions=@lunation/source --import tsx packages/store-redis/bench/commit-bench.ts
import { randomBytes } from 'node:crypto';
import { formatCommitResult, measureCommits } from '@lunation/store-testkit/bench';
import { Redis } from 'ioredis';
import { RedisStore } from '../src/index.js';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const keyPrefix = `lunation-bench:${randomBytes(4).toString('hex')}:`;
const store = new RedisStore({ url, keyPrefix });
const result = await measureCommits(store, { warmupSteps: 1000, batches: 40, batchSize: 250 });
console.log(formatCommitResult('RedisStore.commit', result));
await store.close();
const admin = new Redis(url);
let cursor = '0';
do {
  const [next, keys] = await admin.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000);
  if (keys.length > 0) await admin.del(...keys);
  cursor = next;
} while (cursor !== '0');
admin.disconnect();
