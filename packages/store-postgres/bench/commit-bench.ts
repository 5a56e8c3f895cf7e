// Checkpoint commit latency against a real PostgreSQL (POSTGRES_URL, default the test database), measured by
// `@lunation/store-testkit/bench` (one agent step per commit, one statement per step). Prints the figures of 20
// batches of 100 steps, with the server's default synchronous_commit and off.
// Run: node --conditions=@lunation/source --import tsx packages/store-postgres/bench/commit-bench.ts
import { randomBytes } from 'node:crypto';
import { formatCommitResult, measureCommits } from '@lunation/store-testkit/bench';
import { PostgresStore } from '../src/index.js';

const url = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const variants = {
  default: url,
  'synchronous_commit off': `${url}${url.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c synchronous_commit=off')}`,
};

for (const [name, connectionString] of Object.entries(variants)) {
  const schema = `lunation_bench_${randomBytes(4).toString('hex')}`;
  const store = await PostgresStore.open({ connectionString, schema, maxConnections: 1 });
  try {
    const result = await measureCommits(store, { warmupSteps: 300, batches: 20, batchSize: 100 });
    console.log(formatCommitResult(`PostgresStore.commit (${name})`, result));
  } finally {
    await store.dropSchema();
  }
}
