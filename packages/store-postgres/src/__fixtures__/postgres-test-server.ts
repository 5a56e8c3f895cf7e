import { postgresTestServer } from '@lunation/store-testkit/postgres';
import pg from 'pg';

/** The kit's PostgreSQL fixture, as the store-postgres tests use it. */
export const { postgresUrl, uniqueSchema, sharedTestPostgres, dropSchema } = postgresTestServer({
  Pool: pg.Pool,
  label: 'store-postgres',
});
