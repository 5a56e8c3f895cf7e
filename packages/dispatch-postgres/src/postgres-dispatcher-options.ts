import {
  type Clock,
  type DispatchPolicy,
  type IdSource,
  LunationError,
  systemClock,
  systemIds,
} from '@lunation/contract';
import { assertId, assertInteger, resolveDispatchPolicy } from '@lunation/contract/dispatch-utils';
import { quoteIdentifier } from '@lunation/contract/postgres-utils';
import pg from 'pg';
import type { DispatchContext, PostgresSettings } from './dispatch-context.js';
import {
  assertQueueName,
  assertSchemaName,
  DispatchChannels,
  defaultQueueName,
  defaultSchema,
} from './dispatch-schema.js';
import { NotificationHub } from './notification-hub.js';
import type { PostgresDispatcherPool } from './postgres-connection.js';
import { ThreadJobs } from './thread-jobs.js';

/** Settings every PostgreSQL dispatcher takes, beside the contract's policy. */
export interface PostgresDispatcherCommonOptions extends DispatchPolicy {
  /**
   * The schema holding the dispatcher's tables and pg-boss's, created if missing, so several apps share one
   * database. Lower-case letters, digits and `_`, at most 50. @default 'lunation_dispatch'
   */
  schema?: string;
  /** The pg-boss queue of thread jobs. @default 'lunation_threads' */
  queueName?: string;
  /** The lock of a claim made without `lockMs`; a claim not extended within it is lost. @default 2000 */
  lockMs?: number;
  /**
   * The longest a waiting claim or a subscription sleeps without a notification before it looks again (a safety
   * net for a lost NOTIFY). @default 1000
   */
  pollIntervalMs?: number;
  /**
   * The most claims this instance holds and works at once (a fleet worker's `concurrency`). The pool must hold
   * a connection for each claim's `extend` beside the listening connection, pg-boss's and maintenance's: a pool
   * smaller than `concurrency + 3` is refused. @default what the pool holds: `maxConnections - 3`, or 4 when
   * the dispatcher opens its pool without `maxConnections`
   */
  concurrency?: number;
  /** How often this instance runs maintenance (expired event logs, old acknowledged ids, repairs). @default 60000 */
  maintenanceIntervalMs?: number;
  /** Receives errors of background work (pg-boss, maintenance, the listening connection). @default ignore them */
  onError?: (error: unknown) => void;
  /**
   * Where the dispatcher's own code reads time and sets its timers (claim waits and their retries, the listening
   * connection's reconnect pauses, maintenance, the close grace). Locks, delays and the times it stores are the
   * server's clock's; pg-boss's timers are its own. @default systemClock
   */
  clock?: Clock;
  /** Where cancel request ids come from. @default systemIds */
  ids?: IdSource;
}

/** A dispatcher that opens (and ends) its own pool. */
export interface PostgresDispatcherConnectionOptions extends PostgresDispatcherCommonOptions {
  /** e.g. `postgres://user:password@host:5432/app`. */
  connectionString: string;
  /**
   * The most connections the dispatcher's pool opens: at least `concurrency + 3` (a connection per held claim,
   * plus one listening, one for pg-boss's supervision, one for maintenance and other calls), refused below.
   * @default 2 * concurrency + 3 (each claim's extend beside its run's appends and acknowledgements); 11
   */
  maxConnections?: number;
}

/** A dispatcher on a pool you own (left open by `close()`). */
export interface PostgresDispatcherPoolOptions extends PostgresDispatcherCommonOptions {
  /**
   * A pg `Pool` with at least `concurrency + 3` connections (its `options.max` is checked when it has one): one
   * per held claim, one listens, one for pg-boss's supervision and one for maintenance and other calls.
   */
  pool: PostgresDispatcherPool;
}

/** Options of {@link PostgresDispatcher}: a connection string or a pool, plus the common settings. */
export type PostgresDispatcherOptions = PostgresDispatcherConnectionOptions | PostgresDispatcherPoolOptions;

/** Claims an instance holds at once, by default (a fleet worker's default concurrency). */
export const defaultConcurrency = 4;

/**
 * Connections the pool needs beside one per held claim: the listening connection, pg-boss's supervision, and
 * one for maintenance and the calls of other roles (submits, reads, subscriptions, cancels).
 */
export const reservedConnections = 3;

/** The least pool size for `concurrency` held claims; smaller is refused. */
export function minimumConnections(concurrency: number): number {
  return concurrency + reservedConnections;
}

/** The pool size a dispatcher opens for `concurrency` held claims when not told: room for an extend and an append per claim. */
export function defaultConnections(concurrency: number): number {
  return 2 * concurrency + reservedConnections;
}

/** Acknowledged submission ids count as duplicates this long, by default (24 h). */
export const defaultDedupeWindowMs = 86_400_000;

/** The dispatcher's own settings with their defaults, checked. */
export function resolveSettings(options: PostgresDispatcherCommonOptions): PostgresSettings {
  if ('maxLostClaims' in options && options.maxLostClaims !== undefined) {
    throw invalid(
      'maxLostClaims was removed: a lost claim (a worker that died or stalled past its lock) never dead-letters a thread any more, only fail() does (maxAttempts); remove the option',
    );
  }
  const settings: PostgresSettings = {
    lockMs: options.lockMs ?? 2_000,
    pollIntervalMs: options.pollIntervalMs ?? 1_000,
    maintenanceIntervalMs: options.maintenanceIntervalMs ?? 60_000,
  };
  for (const [name, value] of Object.entries(settings)) assertInteger(value, name, 1);
  if (options.onError !== undefined && typeof options.onError !== 'function') {
    throw invalid('onError must be a function');
  }
  return settings;
}

/**
 * Checks the options and builds what the dispatcher's parts share: the pool (opened here for a connection
 * string; its idle-connection errors go to `onPoolError` and `onError`), the policy, the settings and pg-boss.
 */
export function openContext(
  options: PostgresDispatcherOptions,
  onPoolError: (error: unknown) => void,
): { context: DispatchContext; ownedPool: pg.Pool | undefined } {
  if (typeof options !== 'object' || options === null) {
    throw invalid('PostgresDispatcher needs options: { connectionString } or { pool }');
  }
  const policy = resolveDispatchPolicy(options, { dedupeWindowMs: defaultDedupeWindowMs });
  const settings = resolveSettings(options);
  const concurrency = options.concurrency;
  if (concurrency !== undefined) assertInteger(concurrency, 'concurrency', 1);
  const schema = options.schema ?? defaultSchema;
  assertSchemaName(schema);
  const queueName = options.queueName ?? defaultQueueName;
  assertQueueName(queueName);
  const reportError = options.onError ?? (() => {});
  const clock = options.clock ?? systemClock;
  let pool: PostgresDispatcherPool;
  let ownedPool: pg.Pool | undefined;
  if ('pool' in options) {
    if (typeof options.pool?.connect !== 'function' || typeof options.pool.query !== 'function') {
      throw invalid('pool must be a pg Pool, e.g. new pg.Pool({ connectionString })');
    }
    pool = options.pool;
    const max = (options.pool as { options?: { max?: unknown } }).options?.max;
    if (typeof max === 'number') assertPoolSize(max, concurrency ?? 1, 'The injected pool has max');
  } else {
    assertId(options.connectionString, 'connectionString');
    const maxConnections = options.maxConnections ?? defaultConnections(concurrency ?? defaultConcurrency);
    assertInteger(maxConnections, 'maxConnections', 1);
    assertPoolSize(maxConnections, concurrency ?? 1, 'maxConnections is');
    ownedPool = new pg.Pool({
      connectionString: options.connectionString,
      max: maxConnections,
      connectionTimeoutMillis: 10_000,
      keepAlive: true,
    });
    ownedPool.on('error', (error) => {
      onPoolError(error);
      reportError(error);
    });
    pool = ownedPool as unknown as PostgresDispatcherPool;
  }
  const bossDatabase = { executeSql: (text: string, values?: unknown[]) => pool.query(text, values) };
  return {
    ownedPool,
    context: {
      pool,
      s: quoteIdentifier(schema),
      schema,
      channels: new DispatchChannels(schema),
      hub: new NotificationHub(pool, reportError, clock),
      jobs: new ThreadJobs(bossDatabase, schema, queueName, reportError),
      policy,
      settings,
      clock,
      ids: options.ids ?? systemIds,
      reportError,
    },
  };
}

/** Refuses a pool too small for `concurrency` held claims beside the connections the dispatcher reserves. */
function assertPoolSize(size: number, concurrency: number, what: string): void {
  const needed = minimumConnections(concurrency);
  if (size >= needed) return;
  throw new LunationError(
    'invalid-argument',
    `${what} ${size} connections, but a dispatcher holding up to ${concurrency} claims (concurrency) needs at least ${needed}: one per claim, plus ${reservedConnections} for the listening connection, pg-boss's supervision and maintenance; raise the pool to ${defaultConnections(concurrency)} (the default for this concurrency) or lower concurrency`,
    { details: { connections: size, concurrency, needed } },
  );
}

function invalid(message: string): LunationError {
  return new LunationError('invalid-argument', message);
}
