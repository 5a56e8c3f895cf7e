import type { Clock, IdSource } from '@lunation/contract';
import type { ResolvedDispatchPolicy } from '@lunation/contract/dispatch-utils';
import type { DispatchChannels } from './dispatch-schema.js';
import type { NotificationHub } from './notification-hub.js';
import type { PostgresDispatcherPool } from './postgres-connection.js';
import type { ThreadJobs } from './thread-jobs.js';

/** The dispatcher's own settings beside the contract's policy, with defaults applied. */
export interface PostgresSettings {
  lockMs: number;
  pollIntervalMs: number;
  maintenanceIntervalMs: number;
}

/** What the parts of one dispatcher share. */
export interface DispatchContext {
  pool: PostgresDispatcherPool;
  /** The schema, quoted for SQL. */
  s: string;
  schema: string;
  channels: DispatchChannels;
  hub: NotificationHub;
  jobs: ThreadJobs;
  policy: ResolvedDispatchPolicy;
  settings: PostgresSettings;
  /** Where the dispatcher's own code reads time and sets timers (not pg-boss's, not the server's clock). */
  clock: Clock;
  /** Where cancel request ids come from. */
  ids: IdSource;
  reportError(error: unknown): void;
}
