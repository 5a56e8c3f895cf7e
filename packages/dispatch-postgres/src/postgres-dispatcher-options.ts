import { type DispatchPolicy, LunationError } from '@lunation/contract';
import { assertId, assertInteger, resolveDispatchPolicy } from '@lunation/contract/dispatch-utils';
import pg from 'pg';
import type { DispatchContext, PostgresSettings } from './dispatch-context.js';
import {
  assertQueueName,
  assertSchemaName,
  DispatchChannels,
  defaultQueueName,
  defaultSchema,
  quoteIdentifier,
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
  /** Lost claims in a row (workers died or stalled holding the thread) before it is dead-lettered. @default 10 */
  maxLostClaims?: number;
  /** How often this instance runs maintenance (expired event logs, old acknowledged ids, repairs). @default 60000 */
  maintenanceIntervalMs?: number;
  /** Receives errors of background work (pg-boss, maintenance, the listening connection). @default ignore them */
  onError?: (error: unknown) => void;
}

/** A dispatcher that opens (and ends) its own pool. */
export interface PostgresDispatcherConnectionOptions extends PostgresDispatcherCommonOptions {
  /** e.g. `postgres://user:password@host:5432/app`. */
  connectionString: string;
  /** The most connections the dispatcher's pool opens (one of them listens while anything waits). @default 10 */
  maxConnections?: number;
}

/** A dispatcher on a pool you own (left open by `close()`). */
export interface PostgresDispatcherPoolOptions extends PostgresDispatcherCommonOptions {
  /** A pg `Pool` with at least 3 connections: one listens, one holds a transaction, pg-boss reads with another. */
  pool: PostgresDispatcherPool;
}

/** Options of {@link PostgresDispatcher}: a connection string or a pool, plus the common settings. */
export type PostgresDispatcherOptions = PostgresDispatcherConnectionOptions | PostgresDispatcherPoolOptions;

/** Acknowledged submission ids count as duplicates this long, by default (24 h). */
export const defaultDedupeWindowMs = 86_400_000;

/** The dispatcher's own settings with their defaults, checked. */
export function resolveSettings(options: PostgresDispatcherCommonOptions): PostgresSettings {
  const settings: PostgresSettings = {
    lockMs: options.lockMs ?? 2_000,
    pollIntervalMs: options.pollIntervalMs ?? 1_000,
    maxLostClaims: options.maxLostClaims ?? 10,
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
  const schema = options.schema ?? defaultSchema;
  assertSchemaName(schema);
  const queueName = options.queueName ?? defaultQueueName;
  assertQueueName(queueName);
  const reportError = options.onError ?? (() => {});
  let pool: PostgresDispatcherPool;
  let ownedPool: pg.Pool | undefined;
  if ('pool' in options) {
    if (typeof options.pool?.connect !== 'function' || typeof options.pool.query !== 'function') {
      throw invalid('pool must be a pg Pool, e.g. new pg.Pool({ connectionString })');
    }
    pool = options.pool;
  } else {
    assertId(options.connectionString, 'connectionString');
    const maxConnections = options.maxConnections ?? 10;
    assertInteger(maxConnections, 'maxConnections', 3);
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
      hub: new NotificationHub(pool, reportError),
      jobs: new ThreadJobs(bossDatabase, schema, queueName, reportError),
      policy,
      settings,
      reportError,
    },
  };
}

function invalid(message: string): LunationError {
  return new LunationError('invalid-argument', message);
}
