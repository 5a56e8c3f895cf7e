import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The PostgreSQL server the tests use; they fail (never skip) when it is not reachable. */
export const postgresUrl = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A schema name no other test uses. */
export function uniqueSchema(): string {
  return `lunation_dispatch_test_${randomBytes(6).toString('hex')}`;
}

/** Settings that keep the kit's waits short: a missed NOTIFY is noticed within 200 ms. */
export const testSettings = { pollIntervalMs: 200, maxConnections: 6 } as const;

/**
 * One pool per test file for setup and inspection, failing every test with a clear message (rather than skipping
 * them) when the server is down. Call `connect()` in `beforeAll` and `connected()` in tests or hooks.
 */
export function sharedTestPostgres(): {
  connect(): Promise<void>;
  connected(): pg.Pool;
  end(): Promise<void>;
} {
  let pool: pg.Pool | undefined;
  let failure: unknown;
  return {
    async connect() {
      const candidate = new pg.Pool({
        connectionString: postgresUrl,
        max: 3,
        connectionTimeoutMillis: 5_000,
      });
      candidate.on('error', () => {});
      try {
        await candidate.query('SELECT 1');
        pool = candidate;
      } catch (error) {
        await candidate.end().catch(() => {});
        failure = new Error(
          `The dispatch-postgres tests need a PostgreSQL server at ${postgresUrl} (start one, or set POSTGRES_URL): ${String(error)}`,
        );
      }
    },
    connected() {
      if (pool === undefined) throw failure;
      return pool;
    },
    async end() {
      await pool?.end();
    },
  };
}

/** Drops `schema` with everything in it. */
export async function dropSchema(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}
