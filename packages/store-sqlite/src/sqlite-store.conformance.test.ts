import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LunationStore } from '@lunation/contract';
import { runStoreConformance } from '@lunation/store-testkit';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { afterAll } from 'vitest';
import { SqliteStore } from './sqlite-store.js';

const directory = mkdtempSync(join(tmpdir(), 'lunation-sqlite-conformance-'));
const paths = new WeakMap<LunationStore, string>();
const databases = new WeakMap<LunationStore, Kysely<unknown>>();
let files = 0;

afterAll(() => rmSync(directory, { recursive: true, force: true }));

function databasePath(): string {
  files += 1;
  return join(directory, `store-${files}.db`);
}

function removeDatabase(path: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
}

runStoreConformance({
  name: 'sqlite',
  transactionalToolEffects: true,
  async create() {
    const path = databasePath();
    const store = await SqliteStore.open({ path });
    paths.set(store, path);
    return store;
  },
  async destroy(store) {
    await store.close();
    removeDatabase(paths.get(store)!);
  },
  // A second connection to the same file, as another process would open it.
  async createSibling(store) {
    return SqliteStore.open({ path: paths.get(store)! });
  },
});

runStoreConformance({
  name: 'sqlite (kysely)',
  transactionalToolEffects: true,
  async create() {
    const path = databasePath();
    const client = new Database(path);
    client.pragma('journal_mode = WAL');
    client.pragma('busy_timeout = 5000');
    client.pragma('foreign_keys = ON');
    const database = new Kysely<unknown>({ dialect: new SqliteDialect({ database: client }) });
    const store = await SqliteStore.open({ database });
    paths.set(store, path);
    databases.set(store, database);
    return store;
  },
  async destroy(store) {
    await store.close();
    await databases.get(store)!.destroy();
    removeDatabase(paths.get(store)!);
  },
  // A second store on the same Kysely instance, the supported way to share a file within one process: its
  // driver queues both stores' transactions on one connection. A second Kysely instance on the file would be a
  // second connection in this process, which may wait on a lock held across an await (see the README).
  async createSibling(store) {
    return SqliteStore.open({ database: databases.get(store)! });
  },
});
