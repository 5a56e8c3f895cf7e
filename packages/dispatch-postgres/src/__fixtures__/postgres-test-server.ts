import { postgresTestServer } from '@lunation/store-testkit/postgres';
import pg from 'pg';

/** The kit's PostgreSQL fixture, as the dispatch-postgres tests use it. */
export const { postgresUrl, uniqueSchema, sharedTestPostgres, dropSchema } = postgresTestServer({
  Pool: pg.Pool,
  label: 'dispatch-postgres',
  schemaPrefix: 'lunation_dispatch_test',
  maxConnections: 3,
});

/** Settings that keep the kit's waits short: a missed NOTIFY is noticed within 200 ms. */
export const testSettings = { pollIntervalMs: 200, concurrency: 3, maxConnections: 6 } as const;
