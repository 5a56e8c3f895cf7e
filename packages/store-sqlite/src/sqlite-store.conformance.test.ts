import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LunationStore } from '@lunation/contract';
import { runStoreConformance } from '@lunation/store-testkit';
import { afterAll } from 'vitest';
import { SqliteStore } from './sqlite-store.js';

const directory = mkdtempSync(join(tmpdir(), 'lunation-sqlite-conformance-'));
const paths = new WeakMap<LunationStore, string>();
let files = 0;

afterAll(() => rmSync(directory, { recursive: true, force: true }));

runStoreConformance({
  name: 'sqlite',
  async create() {
    files += 1;
    const path = join(directory, `store-${files}.db`);
    const store = await SqliteStore.open({ path });
    paths.set(store, path);
    return store;
  },
  async destroy(store) {
    await store.close();
    const path = paths.get(store)!;
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
  },
  // A second connection to the same file, as another process would open it.
  async createSibling(store) {
    return SqliteStore.open({ path: paths.get(store)! });
  },
});
