import type {
  ToolEffectInput,
  ToolExecution,
  ToolResult,
  TransactionalToolEffects,
} from '@lunation/contract';
import { assertToolEffect, CheckedStore } from '@lunation/contract/store-utils';
import { PostgresBackend } from './postgres-backend.js';
import type { PostgresStoreOptions } from './postgres-store-options.js';

export type {
  PostgresPool,
  PostgresPoolClient,
  PostgresQueryConfig,
  PostgresStoreConnectionOptions,
  PostgresStoreKyselyOptions,
  PostgresStoreOptions,
  PostgresStorePoolOptions,
} from './postgres-store-options.js';

/**
 * A `LunationStore` in PostgreSQL (kysely migrations, node-postgres). Every call is one statement, so one round
 * trip: writes call SQL functions the migrations install, each atomic.
 *
 * @remarks The schema is migrated on first use; call `init()` (or use `PostgresStore.open`) to do it up front.
 */
export class PostgresStore extends CheckedStore implements TransactionalToolEffects {
  declare readonly kind: 'postgres';
  /** The PostgreSQL schema of the store's tables. */
  readonly schema: string;
  readonly #backend: PostgresBackend;

  constructor(options: PostgresStoreOptions) {
    const backend = new PostgresBackend(options);
    super(backend);
    this.#backend = backend;
    this.schema = backend.schema;
  }

  /** Opens the store and brings its schema up to date. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const store = new PostgresStore(options);
    try {
      await store.init();
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  /** Connects and applies pending migrations; idempotent, and done lazily by every method. */
  async init(): Promise<void> {
    this.assertOpen();
    await this.#backend.init();
  }

  /** The name of the newest migration applied to the schema, e.g. `002_store_functions`. */
  async schemaVersion(): Promise<string | undefined> {
    this.assertOpen();
    return this.#backend.schemaVersion();
  }

  /**
   * Drops the store's schema with everything in it (threads, messages, runs, ledger, leases, the migration
   * records), then closes the store. For tests and uninstalls; other stores on the schema stop working.
   */
  async dropSchema(): Promise<void> {
    this.assertOpen();
    try {
      await this.#backend.dropSchema();
    } finally {
      await this.close();
    }
  }

  /**
   * Runs `effect` with a kysely `Transaction` on this database and commits what it wrote together with the
   * call's ledger completion (see `TransactionalToolEffects`). The ledger row stays locked (`FOR UPDATE`)
   * until the transaction ends; the transaction is one connection of the pool.
   */
  async completeToolExecutionWithEffect(
    input: ToolEffectInput,
    effect: (transaction: unknown) => Promise<ToolResult>,
  ): Promise<ToolExecution> {
    this.assertOpen();
    assertToolEffect(input, effect);
    return this.#backend.completeToolExecutionWithEffect(input, effect);
  }
}
