import { randomBytes } from 'node:crypto';

/** The part of a `pg.Pool` the fixture uses (pass `pg.Pool` itself). */
export interface TestPostgresPool {
  /** Runs one SQL statement. */
  query(text: string): Promise<unknown>;
  /** Closes the pool. */
  end(): Promise<void>;
  /** Listens for idle-client errors (the fixture ignores them). */
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** How {@link postgresTestServer} builds a pool: `pg.Pool`'s constructor, or any with the same options. */
export type TestPostgresPoolClass<Pool extends TestPostgresPool> = new (config: {
  connectionString: string;
  max: number;
  connectionTimeoutMillis: number;
}) => Pool;

/** Options of {@link postgresTestServer}. */
export interface PostgresTestServerOptions<Pool extends TestPostgresPool> {
  /** The pool class, e.g. `pg.Pool` (the kit does not depend on `pg`). */
  Pool: TestPostgresPoolClass<Pool>;
  /** Who needs the server, for the message when it is down, e.g. `store-postgres`. */
  label: string;
  /** Prefix of {@link PostgresTestServer.uniqueSchema}'s names. @default `lunation_test` */
  schemaPrefix?: string;
  /** Connections of the shared pool. @default 2 */
  maxConnections?: number;
}

/** What {@link postgresTestServer} gives a package's tests. */
export interface PostgresTestServer<Pool extends TestPostgresPool> {
  /** The server the tests use (`POSTGRES_URL`, else the local `test` database); never skipped when down. */
  readonly postgresUrl: string;
  /** A schema name no other test uses. */
  uniqueSchema(): string;
  /**
   * One pool per test file for setup and inspection, failing every test with a clear message (rather than
   * skipping them) when the server is down. Call `connect()` in `beforeAll` and `connected()` in tests or hooks.
   */
  sharedTestPostgres(): {
    /** Opens the pool, remembering the failure when the server is down (call it in `beforeAll`). */
    connect(): Promise<void>;
    /** The pool; throws the connection failure when the server was down. */
    connected(): Pool;
    /** Closes the pool (call it in `afterAll`). */
    end(): Promise<void>;
  };
  /** Drops `schema` with everything in it. */
  dropSchema(pool: TestPostgresPool, schema: string): Promise<void>;
}

/**
 * The PostgreSQL fixture of a package's tests (store-postgres, dispatch-postgres, a third-party store): a
 * server URL, unique schema names and a shared pool that fails tests (never skips them) when the server is
 * down. Test-only; `@lunation/store-testkit/postgres`.
 */
export function postgresTestServer<Pool extends TestPostgresPool>(
  options: PostgresTestServerOptions<Pool>,
): PostgresTestServer<Pool> {
  const postgresUrl = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schemaPrefix = options.schemaPrefix ?? 'lunation_test';
  return {
    postgresUrl,
    uniqueSchema: () => `${schemaPrefix}_${randomBytes(6).toString('hex')}`,
    sharedTestPostgres() {
      let pool: Pool | undefined;
      let failure: unknown;
      return {
        async connect() {
          const candidate = new options.Pool({
            connectionString: postgresUrl,
            max: options.maxConnections ?? 2,
            connectionTimeoutMillis: 5_000,
          });
          candidate.on('error', () => {});
          try {
            await candidate.query('SELECT 1');
            pool = candidate;
          } catch (error) {
            await candidate.end().catch(() => {});
            failure = new Error(
              `The ${options.label} tests need a PostgreSQL server at ${postgresUrl} (start one, or set POSTGRES_URL): ${String(error)}`,
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
    },
    async dropSchema(pool, schema) {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    },
  };
}
