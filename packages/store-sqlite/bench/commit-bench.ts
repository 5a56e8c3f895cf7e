// Checkpoint commit latency on a file database, measured by `@lunation/store-testkit/bench` (one agent step per
// commit). Prints the figures of 40 batches of 250 steps.
// Run: node --conditions=@lunation/source --import tsx packages/store-sqlite/bench/commit-bench.ts
// SYNCHRONOUS=full fsyncs every commit; STORE=kysely runs the store on an injected Kysely instance;
// CHECKPOINT=inline checkpoints inside commits instead of on a background thread.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatCommitResult, measureCommits } from '@lunation/store-testkit/bench';
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
const result = await measureCommits(store, { warmupSteps: 1000, batches: 40, batchSize: 250 });
const variant = database ? 'kysely' : `checkpoint=${checkpoint}`;
console.log(formatCommitResult(`SqliteStore.commit (${variant}, synchronous=${synchronous})`, result));
await store.close();
await database?.destroy();
rmSync(directory, { recursive: true, force: true });
