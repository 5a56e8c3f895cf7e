import type {
  ToolEffectInput,
  ToolExecution,
  ToolResult,
  TransactionalToolEffects,
} from '@lunation/contract';
import { assertToolEffect, CheckedStore } from '@lunation/contract/store-utils';
import { SqliteBackend } from './sqlite-backend.js';
import type { SqliteStoreOptions } from './sqlite-store-options.js';

export type {
  SqliteStoreClientOptions,
  SqliteStoreCommonOptions,
  SqliteStoreKyselyOptions,
  SqliteStoreOptions,
  SqliteStorePathOptions,
} from './sqlite-store-options.js';

/**
 * A `LunationStore` in one SQLite file (kysely migrations; better-sqlite3 prepared statements, or an injected
 * Kysely instance).
 *
 * @remarks The schema is migrated on first use; call `init()` (or use `SqliteStore.open`) to do it up front.
 */
export class SqliteStore extends CheckedStore implements TransactionalToolEffects {
  declare readonly kind: 'sqlite';
  readonly #backend: SqliteBackend;

  constructor(options: SqliteStoreOptions) {
    const backend = new SqliteBackend(options);
    super(backend);
    this.#backend = backend;
  }

  /** Opens the store and brings its schema up to date. */
  static async open(options: SqliteStoreOptions): Promise<SqliteStore> {
    const store = new SqliteStore(options);
    await store.init();
    return store;
  }

  /** Opens the database and applies pending migrations; idempotent, and done lazily by every method. */
  async init(): Promise<void> {
    this.assertOpen();
    await this.#backend.init();
  }

  /** The name of the newest migration applied to the database, e.g. `002_message_run_id`. */
  async schemaVersion(): Promise<string | undefined> {
    this.assertOpen();
    return this.#backend.schemaVersion();
  }

  /**
   * Runs `effect` with a kysely `Transaction` on this database and commits what it wrote together with the
   * call's ledger completion (see `TransactionalToolEffects`). The transaction holds the database's write
   * lock until it ends, and this store's other calls wait for it: keep effects short, and use only the
   * transaction inside them.
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
