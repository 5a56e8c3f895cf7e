import type { Dispatcher } from '@lunation/contract';
import { runDispatcherConformance } from '@lunation/dispatch-testkit';
import type pg from 'pg';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import {
  dropSchema,
  postgresUrl,
  sharedTestPostgres,
  testSettings,
  uniqueSchema,
} from './__fixtures__/postgres-test-server.js';
import { PostgresDispatcher } from './postgres-dispatcher.js';

const server = sharedTestPostgres();
let admin: pg.Pool;

beforeAll(() => server.connect());

// Every test fails (none is skipped) with a clear message when PostgreSQL is down.
beforeEach(() => {
  admin = server.connected();
});

afterAll(() => server.end());

runDispatcherConformance({
  name: 'postgres',
  // A fresh schema per test (the dispatcher's tables and pg-boss's), dropped afterwards.
  create: (policy) =>
    PostgresDispatcher.open({
      ...policy,
      ...testSettings,
      connectionString: postgresUrl,
      schema: uniqueSchema(),
    }),
  // Its own pool and listening connection on the same schema, as another process would have.
  createSibling: (dispatcher, policy) =>
    PostgresDispatcher.open({
      ...policy,
      ...testSettings,
      connectionString: postgresUrl,
      schema: (dispatcher as PostgresDispatcher).schema,
    }),
  async destroy(dispatcher: Dispatcher) {
    await dispatcher.close();
    await dropSchema(admin, (dispatcher as PostgresDispatcher).schema);
  },
  redeliveryMs: 3_000,
  // The kit's worker process opens its dispatcher on the same database and schema.
  workerProcess: {
    module: new URL('./__fixtures__/open-dispatcher.ts', import.meta.url),
    backend: (dispatcher) => ({ schema: (dispatcher as PostgresDispatcher).schema }),
  },
});
