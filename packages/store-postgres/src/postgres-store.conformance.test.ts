import type { LunationStore } from '@lunation/contract';
import { runStoreConformance } from '@lunation/store-testkit';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import {
  dropSchema,
  postgresUrl,
  sharedTestPostgres,
  uniqueSchema,
} from './__fixtures__/postgres-test-server.js';
import { PostgresStore } from './postgres-store.js';

const server = sharedTestPostgres();
let admin: pg.Pool;
const databases = new WeakMap<LunationStore, { kysely: Kysely<unknown>; pool: pg.Pool }>();

beforeAll(() => server.connect());

// Every test fails (none is skipped) with a clear message when PostgreSQL is down.
beforeEach(() => {
  admin = server.connected();
});

afterAll(() => server.end());

runStoreConformance({
  name: 'postgres',
  transactionalToolEffects: true,
  // A fresh schema per test, dropped afterwards.
  create: () => PostgresStore.open({ connectionString: postgresUrl, schema: uniqueSchema() }),
  async destroy(store) {
    await store.close();
    await dropSchema(admin, (store as PostgresStore).schema);
  },
  // Its own pool on the same schema, as another process would have.
  createSibling: (store) =>
    PostgresStore.open({ connectionString: postgresUrl, schema: (store as PostgresStore).schema }),
});

runStoreConformance({
  name: 'postgres (kysely)',
  transactionalToolEffects: true,
  async create() {
    const pool = new pg.Pool({ connectionString: postgresUrl, max: 4 });
    const kysely = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
    const store = await PostgresStore.open({ database: kysely, schema: uniqueSchema() });
    databases.set(store, { kysely, pool });
    return store;
  },
  async destroy(store) {
    await store.close();
    await dropSchema(admin, (store as PostgresStore).schema);
    await databases.get(store)!.kysely.destroy();
  },
  // A second store on the same Kysely instance and schema.
  createSibling: (store) =>
    PostgresStore.open({ database: databases.get(store)!.kysely, schema: (store as PostgresStore).schema }),
});

runStoreConformance({
  name: 'postgres (every call batched)',
  transactionalToolEffects: true,
  // Every commit, lease acquire and release, thread creation and checkpoint load goes through run_batch.
  create: () =>
    PostgresStore.open({ connectionString: postgresUrl, schema: uniqueSchema(), callBatching: 'always' }),
  async destroy(store) {
    await store.close();
    await dropSchema(admin, (store as PostgresStore).schema);
  },
  createSibling: (store) =>
    PostgresStore.open({
      connectionString: postgresUrl,
      schema: (store as PostgresStore).schema,
      callBatching: 'always',
    }),
});
