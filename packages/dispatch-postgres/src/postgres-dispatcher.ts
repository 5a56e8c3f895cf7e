import { CheckedDispatcher } from '@lunation/contract/dispatch-utils';
import { PostgresDispatchBackend } from './postgres-dispatch-backend.js';
import type { PostgresDispatcherOptions } from './postgres-dispatcher-options.js';

/**
 * A `Dispatcher` on PostgreSQL: one pg-boss job per thread with work, claimed with pg-boss's fetch and settled
 * with its fenced complete, fail, cancel and touch; inboxes, claim locks, dead letters, cancel requests and run
 * event logs in tables beside pg-boss's, in one schema; LISTEN/NOTIFY wakes waiting claims, cancel watches and
 * event subscriptions across processes.
 *
 * @remarks The schema is migrated on first use; call `init()` (or use `PostgresDispatcher.open`) to do it up front.
 */
export class PostgresDispatcher extends CheckedDispatcher {
  declare readonly kind: 'postgres';
  /** The PostgreSQL schema of the dispatcher's (and pg-boss's) tables. */
  readonly schema: string;
  readonly #backend: PostgresDispatchBackend;

  constructor(options: PostgresDispatcherOptions) {
    const backend = new PostgresDispatchBackend(options);
    super(backend);
    this.#backend = backend;
    this.schema = backend.schema;
  }

  /** Opens a dispatcher and brings its schema (its own tables and pg-boss's) up to date. */
  static async open(options: PostgresDispatcherOptions): Promise<PostgresDispatcher> {
    const dispatcher = new PostgresDispatcher(options);
    try {
      await dispatcher.init();
    } catch (error) {
      await dispatcher.close().catch(() => {});
      throw error;
    }
    return dispatcher;
  }

  /**
   * Migrates the schema (once, under an advisory lock, however many processes start at once), starts pg-boss
   * and this instance's maintenance. Every call does it first when needed.
   */
  async init(): Promise<void> {
    this.assertOpen();
    try {
      await this.#backend.init();
    } catch (error) {
      throw this.toDispatchError(error, 'init');
    }
  }

  /** Drops the schema with everything in it (the dispatcher's tables and pg-boss's), then closes. */
  async dropSchema(): Promise<void> {
    this.assertOpen();
    this.#backend.dropSchemaOnClose();
    await this.close();
  }
}
