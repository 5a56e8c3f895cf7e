import type { Clock } from '@lunation/contract';
import type { Kysely } from 'kysely';
import type { SqliteClient } from './sqlite-client.js';

/** A store on a database file it opens, configures and closes itself. */
export interface SqliteStorePathOptions {
  /** The database file, created if missing (`:memory:` works too, but only within one store). */
  path: string;
  /** How long a write waits for another connection's lock before failing. @default 5000 */
  busyTimeoutMs?: number;
  /**
   * `normal`: commits survive a process crash, the last ones may roll back on power loss (fast).
   * `full`: every commit is fsynced. @default 'normal'
   */
  synchronous?: 'normal' | 'full';
  /**
   * Who copies the write-ahead log into the database file (and fsyncs both): `background`, a worker thread
   * with its own connection, or `inline`, SQLite's automatic checkpoints inside the commits that fill the log.
   * Durability is the same. @default 'background'
   */
  checkpoint?: 'background' | 'inline';
}

/** A store on a better-sqlite3 connection you own (used as configured, left open by `close()`). */
export interface SqliteStoreClientOptions {
  /** An open better-sqlite3 database, used as configured and left open by `close()`. */
  client: SqliteClient;
}

/** A store on a Kysely instance you own (kysely's `SqliteDialect` on better-sqlite3). */
export interface SqliteStoreKyselyOptions {
  /**
   * A Kysely instance on kysely's `SqliteDialect` (better-sqlite3), used as configured (its plugins are
   * bypassed) and left open by `close()`.
   *
   * @remarks Every write transaction spans `await`s: in this process, write to the file only through this
   * instance (see the README).
   */
  // biome-ignore lint/suspicious/noExplicitAny: an application's Kysely of any schema
  database: Kysely<any>;
}

/** What every {@link SqliteStore} takes besides where its database is. */
export interface SqliteStoreCommonOptions {
  /**
   * Where the store reads the times it records and judges leases by (thread, run and tool execution timestamps,
   * lease expiries); a simulation passes a virtual clock. @default systemClock
   */
  clock?: Clock;
}

/** Options of {@link SqliteStore}: a file path, a connection or a Kysely instance, and the common options. */
export type SqliteStoreOptions = (
  | SqliteStorePathOptions
  | SqliteStoreClientOptions
  | SqliteStoreKyselyOptions
) &
  SqliteStoreCommonOptions;
