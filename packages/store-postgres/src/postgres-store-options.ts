import type { Clock } from '@lunation/contract';
import type {
  Kysely,
  PostgresPool as KyselyPostgresPool,
  PostgresPoolClient as KyselyPostgresPoolClient,
} from 'kysely';
import type { CallBatching } from './call-batcher.js';

/** A query as the store sends it: a named (prepared) statement, its values, rows as arrays. */
export interface PostgresQueryConfig {
  name: string;
  text: string;
  values: unknown[];
  rowMode: 'array';
}

/** The part of a pg pool client the store and kysely's `PostgresDialect` use (a `pg.PoolClient` fits). */
export interface PostgresPoolClient extends KyselyPostgresPoolClient {
  /** Runs a query: kysely's plain queries, and the store's named statements with array rows. */
  query: KyselyPostgresPoolClient['query'] &
    ((config: PostgresQueryConfig) => Promise<{ rows: unknown[][] }>);
  /** Returns the connection to the pool; with an error, the pool ends it instead. */
  release(error?: Error | boolean): void;
}

/**
 * The part of a pg `Pool` the store uses: `connect` for each call and for migrations (through kysely's
 * `PostgresDialect`). A `pg.Pool` fits.
 */
export interface PostgresPool extends KyselyPostgresPool {
  /** Checks a client out of the pool. */
  connect(): Promise<PostgresPoolClient>;
}

interface PostgresStoreCommonOptions {
  /**
   * The PostgreSQL schema holding the store's tables and functions, created if missing, so several apps or
   * stores can share one database. @default 'lunation'
   */
  schema?: string;
  /**
   * Group commit. `'auto'`: while every connection is busy, the calls that wait (commits, lease acquire and
   * release, thread creation, checkpoint loads) go to the server together, one round trip and one transaction
   * for up to 32 calls, each rolled back alone if it is rejected; a call alone is sent as before. `'off'`:
   * every call is its own round trip. `'always'`: every such call goes through the batch function, even alone
   * (what the conformance suite runs to cover that path). @default 'auto'
   */
  callBatching?: CallBatching;
  /**
   * Where the store reads the times it records (thread, run and tool execution timestamps; lease expiries are the
   * PostgreSQL server's clock); a simulation passes a virtual clock. @default systemClock
   */
  clock?: Clock;
}

/** {@link PostgresStore} options that connect with a connection string: the store owns its pool. */
export interface PostgresStoreConnectionOptions extends PostgresStoreCommonOptions {
  /** e.g. `postgres://user:password@host:5432/database`; the store opens and closes its own pool. */
  connectionString: string;
  /** The most connections the store's pool opens. @default 10 */
  maxConnections?: number;
}

/** {@link PostgresStore} options with a pg `Pool` you own. */
export interface PostgresStorePoolOptions extends PostgresStoreCommonOptions {
  /** A pg `Pool` you own, left open by `close()`. */
  pool: PostgresPool;
}

/** {@link PostgresStore} options with a Kysely instance you own. */
export interface PostgresStoreKyselyOptions extends PostgresStoreCommonOptions {
  /** A Kysely instance on kysely's `PostgresDialect` that you own (its plugins are bypassed), left open by `close()`. */
  // biome-ignore lint/suspicious/noExplicitAny: an application's Kysely of any schema
  database: Kysely<any>;
}

/** What {@link PostgresStore} takes: a connection string, a pg `Pool`, or a Kysely instance, and a `schema`. */
export type PostgresStoreOptions =
  | PostgresStoreConnectionOptions
  | PostgresStorePoolOptions
  | PostgresStoreKyselyOptions;
