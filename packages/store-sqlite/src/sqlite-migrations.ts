import { LunationError } from '@lunation/contract';
import {
  CompiledQuery,
  Kysely,
  type Migration,
  Migrator,
  type SqliteDatabase,
  SqliteDialect,
  sql,
} from 'kysely';

/** Kysely's bookkeeping tables, prefixed so they never clash with an application's own migrations. */
export const migrationTableName = 'lunation_migration';
export const migrationLockTableName = 'lunation_migration_lock';

/**
 * Every schema version, oldest first. Migrations are forward-only: once released, a migration never changes;
 * a new version gets a new entry.
 */
export const sqliteMigrations: Readonly<Record<string, Migration>> = {
  '001_initial': {
    async up(db) {
      await db.schema
        .createTable('lunation_threads')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('resource_id', 'text')
        .addColumn('metadata', 'text', (column) => column.notNull())
        .addColumn('message_count', 'integer', (column) => column.notNull().defaultTo(0))
        .addColumn('created_at', 'integer', (column) => column.notNull())
        .addColumn('updated_at', 'integer', (column) => column.notNull())
        // The thread-scoped state as JSON (NULL: none yet). Last, so reads of other columns skip it.
        .addColumn('state', 'text')
        .execute();
      await db.schema
        .createIndex('lunation_threads_created_at')
        .on('lunation_threads')
        .columns(['created_at', 'id'])
        .execute();

      await db.schema
        .createTable('lunation_messages')
        .addColumn('thread_id', 'text', (column) =>
          column.notNull().references('lunation_threads.id').onDelete('cascade'),
        )
        .addColumn('seq', 'integer', (column) => column.notNull())
        .addColumn('message', 'text', (column) => column.notNull())
        .addColumn('created_at', 'integer', (column) => column.notNull())
        .addPrimaryKeyConstraint('lunation_messages_pk', ['thread_id', 'seq'])
        .execute();

      await db.schema
        .createTable('lunation_runs')
        // Insertion order, the tie-breaker between runs created in the same millisecond.
        .addColumn('seq', 'integer', (column) => column.primaryKey())
        .addColumn('run_id', 'text', (column) => column.notNull().unique())
        .addColumn('thread_id', 'text', (column) =>
          column.notNull().references('lunation_threads.id').onDelete('cascade'),
        )
        .addColumn('record', 'text', (column) => column.notNull())
        .addColumn('created_at', 'integer', (column) => column.notNull())
        .execute();
      await db.schema
        .createIndex('lunation_runs_thread')
        .on('lunation_runs')
        .columns(['thread_id', 'created_at', 'seq'])
        .execute();

      await db.schema
        .createTable('lunation_tool_executions')
        .addColumn('run_id', 'text', (column) => column.notNull())
        .addColumn('tool_call_id', 'text', (column) => column.notNull())
        .addColumn('thread_id', 'text', (column) => column.notNull())
        .addColumn('record', 'text', (column) => column.notNull())
        .addPrimaryKeyConstraint('lunation_tool_executions_pk', ['run_id', 'tool_call_id'])
        .execute();
      await db.schema
        .createIndex('lunation_tool_executions_thread')
        .on('lunation_tool_executions')
        .column('thread_id')
        .execute();

      // One row per thread that ever had a lease; it outlives release and deletion as the token counter.
      await db.schema
        .createTable('lunation_leases')
        .addColumn('thread_id', 'text', (column) => column.primaryKey())
        .addColumn('token', 'integer', (column) => column.notNull())
        .addColumn('owner', 'text', (column) => column.notNull())
        .addColumn('run_id', 'text', (column) => column.notNull())
        .addColumn('expires_at', 'integer')
        .execute();
    },
  },
  '002_message_run_id': {
    async up(db) {
      await db.schema.alterTable('lunation_messages').addColumn('run_id', 'text').execute();
      // Before 002 the producing run was only known from the message's own `metadata.runId`.
      await sql`
        UPDATE lunation_messages SET run_id = json_extract(message, '$.metadata.runId')
        WHERE json_type(message, '$.metadata.runId') = 'text'
      `.execute(db);
      await db.schema
        .createIndex('lunation_threads_resource')
        .on('lunation_threads')
        .columns(['resource_id', 'created_at', 'id'])
        .execute();
    },
  },
  '003_derived_message_count': {
    async up(db) {
      // A thread's message count is max(seq) of its messages from 003 on: a commit of messages no longer
      // rewrites the thread row, which saves a page write per commit.
      await db.schema.alterTable('lunation_threads').dropColumn('message_count').execute();
    },
  },
  '004_lease_incarnation': {
    async up(db) {
      // Which live instance holds the lease, and when it last renewed it: a same-owner takeover needs both.
      await db.schema.alterTable('lunation_leases').addColumn('incarnation', 'text').execute();
      await db.schema
        .alterTable('lunation_leases')
        .addColumn('renewed_at', 'integer', (column) => column.notNull().defaultTo(0))
        .execute();
      await sql`UPDATE lunation_leases SET renewed_at = coalesce(expires_at, 0)`.execute(db);
    },
  },
};

/** The newest schema version this package knows. */
export const latestSchemaVersion = Object.keys(sqliteMigrations).sort().at(-1)!;

/** A Kysely instance over `client`; never destroy it, that would close the client. */
export function createKysely(client: SqliteDatabase): Kysely<unknown> {
  return new Kysely<unknown>({ dialect: new SqliteDialect({ database: client }) });
}

/** A Migrator over `db` with the store's migrations and bookkeeping tables. */
export function createMigrator(db: Kysely<unknown>): Migrator {
  return new Migrator({
    db,
    provider: { getMigrations: async () => sqliteMigrations },
    migrationTableName,
    migrationLockTableName,
    // `migrate` wraps the whole run in its own BEGIN IMMEDIATE.
    disableTransactions: true,
  });
}

/** Migrations in flight per database file, so stores of one process never migrate the same file at once. */
const migrationsInFlight = new Map<string, Promise<void>>();

/**
 * Brings the database up to `target` (default: the latest version) in one `BEGIN IMMEDIATE` transaction on one
 * connection of `db`, so a concurrent process waits instead of migrating twice; `migration-failed` leaves the
 * old version. `db`'s plugins are bypassed.
 */
export async function migrate(db: Kysely<unknown>, file: string, target?: string): Promise<void> {
  const previous = migrationsInFlight.get(file) ?? Promise.resolve();
  const current = previous.catch(() => undefined).then(() => migrateNow(db.withoutPlugins(), target));
  migrationsInFlight.set(file, current);
  try {
    await current;
  } finally {
    if (migrationsInFlight.get(file) === current) migrationsInFlight.delete(file);
  }
}

function migrateNow(db: Kysely<unknown>, target: string | undefined): Promise<void> {
  return db.connection().execute(async (connection) => {
    const migrator = createMigrator(connection);
    await connection.executeQuery(CompiledQuery.raw('BEGIN IMMEDIATE'));
    let result: Awaited<ReturnType<Migrator['migrateToLatest']>>;
    try {
      result = target === undefined ? await migrator.migrateToLatest() : await migrator.migrateTo(target);
    } catch (error) {
      result = { error };
    }
    if (result.error !== undefined) {
      try {
        await connection.executeQuery(CompiledQuery.raw('ROLLBACK'));
      } catch {
        // SQLite already rolled back (it does so itself after some errors).
      }
      const failed = result.results?.find((migration) => migration.status === 'Error')?.migrationName;
      let reason = result.error instanceof Error ? result.error.message : String(result.error);
      if (/previously executed migration .* is missing/.test(reason)) {
        reason += ' (the database was migrated by a newer @lunation/store-sqlite; upgrade the package)';
      }
      throw new LunationError(
        'migration-failed',
        `SQLite schema migration${failed ? ` ${failed}` : ''} failed: ${reason}; the database keeps its previous version`,
        { cause: result.error },
      );
    }
    await connection.executeQuery(CompiledQuery.raw('COMMIT'));
  });
}
