import { type Clock, systemClock } from '../clock.js';
import { LunationError } from '../errors.js';
import { type PostgresQuery, quoteIdentifier } from './postgres-query.js';

/** What {@link migratePostgresSchema} migrates, and how it names its bookkeeping. */
export interface PostgresMigrationOptions {
  /** The schema to bring up to date (created if missing); the migrations' SQL names it itself. */
  schema: string;
  /**
   * Every version, by name, as the SQL text that brings the previous version to it (several statements may
   * be one text). Applied in name order; a released version never changes, a change is a new name.
   */
  migrations: Readonly<Record<string, string>>;
  /** The table in `schema` recording applied versions (`name`, `timestamp`, as kysely's Migrator keeps it). */
  migrationTable: string;
  /** The lock table kysely's Migrator keeps beside it, created for schemas older versions still migrate. */
  lockTable: string;
  /** The first key of the advisory lock `pg_advisory_lock(lockKey, hashtext(schema))` that serialises processes. */
  lockKey: number;
  /** Who owns the schema, named in errors, e.g. `@lunation/store-postgres`. */
  owner: string;
  /** The version to stop at. @default the last */
  target?: string;
  /** Runs while the advisory lock is still held, after the migrations committed. */
  alsoUnderLock?: () => Promise<void>;
  /** Where the applied versions' timestamps come from. @default systemClock */
  clock?: Clock;
}

/**
 * Brings `options.schema` up to date on the connection `query` runs on, holding the schema's advisory lock, so
 * processes starting at once migrate it once: the others wait, then find nothing to do. The pending versions
 * run in one transaction; any failure is `migration-failed`, and the schema keeps its previous version. A
 * schema that records a version this list does not know (migrated by a newer package) is `migration-failed`
 * too, before anything runs. Bookkeeping is kysely's Migrator's, so schemas it migrated carry on.
 */
export async function migratePostgresSchema(
  query: PostgresQuery,
  options: PostgresMigrationOptions,
): Promise<void> {
  const lock = [options.lockKey, options.schema];
  await query('SELECT pg_advisory_lock($1, hashtext($2))', lock);
  try {
    await ensureBookkeeping(query, options);
    await migrateLocked(query, options);
    await options.alsoUnderLock?.();
  } finally {
    await query('SELECT pg_advisory_unlock($1, hashtext($2))', lock);
  }
}

/**
 * The newest version applied to `schema` among `migrations` (undefined before the first), read from the
 * bookkeeping table of {@link migratePostgresSchema}.
 */
export async function postgresSchemaVersion(
  query: PostgresQuery,
  options: Pick<PostgresMigrationOptions, 'schema' | 'migrations' | 'migrationTable'>,
): Promise<string | undefined> {
  if (!(await tableExists(query, options.schema, options.migrationTable))) return undefined;
  const applied = new Set(await appliedVersions(query, options));
  return Object.keys(options.migrations)
    .sort()
    .filter((name) => applied.has(name))
    .at(-1);
}

async function ensureBookkeeping(query: PostgresQuery, options: PostgresMigrationOptions): Promise<void> {
  const { schema, migrationTable, lockTable } = options;
  const s = quoteIdentifier(schema);
  // Existence first: CREATE ... IF NOT EXISTS still needs the privilege to create, which a user of an
  // existing schema may lack.
  const { rows } = await query('SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1', [schema]);
  if (rows.length === 0) await query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
  if (!(await tableExists(query, schema, migrationTable))) {
    await query(
      `CREATE TABLE IF NOT EXISTS ${s}.${quoteIdentifier(migrationTable)}
       (name varchar(255) NOT NULL PRIMARY KEY, timestamp varchar(255) NOT NULL)`,
    );
  }
  if (!(await tableExists(query, schema, lockTable))) {
    const table = `${s}.${quoteIdentifier(lockTable)}`;
    await query(
      `CREATE TABLE IF NOT EXISTS ${table} (id varchar(255) NOT NULL PRIMARY KEY, is_locked integer NOT NULL DEFAULT 0);
       INSERT INTO ${table} (id, is_locked) VALUES ('migration_lock', 0) ON CONFLICT DO NOTHING`,
    );
  }
}

async function migrateLocked(query: PostgresQuery, options: PostgresMigrationOptions): Promise<void> {
  const { schema, migrations, migrationTable, target } = options;
  const names = Object.keys(migrations).sort();
  const last = target === undefined ? names.length - 1 : names.indexOf(target);
  if (last < 0) throw migrationFailed(options, undefined, `there is no version ${target}`);
  await query('BEGIN');
  let running: string | undefined;
  try {
    const applied = await appliedVersions(query, options);
    for (let index = 0; index < applied.length; index++) {
      if (!names.includes(applied[index]!)) {
        throw new Error(
          `version ${applied[index]} is applied but unknown here (the schema was migrated by a newer ${options.owner}; upgrade the package)`,
        );
      }
      if (names[index] !== applied[index]) {
        throw new Error(`version ${applied[index]} was applied where ${names[index]} belongs`);
      }
    }
    if (applied.length > last + 1) throw new Error(`the schema is already past ${target}`);
    const table = `${quoteIdentifier(schema)}.${quoteIdentifier(migrationTable)}`;
    for (const name of names.slice(applied.length, last + 1)) {
      running = name;
      await query(migrations[name]!);
      await query(`INSERT INTO ${table} (name, timestamp) VALUES ($1, $2)`, [
        name,
        new Date((options.clock ?? systemClock).now()).toISOString(),
      ]);
    }
    running = undefined;
    await query('COMMIT');
  } catch (error) {
    await query('ROLLBACK').catch(() => undefined);
    throw migrationFailed(options, running, error instanceof Error ? error.message : String(error), error);
  }
}

async function appliedVersions(
  query: PostgresQuery,
  { schema, migrationTable }: Pick<PostgresMigrationOptions, 'schema' | 'migrationTable'>,
): Promise<string[]> {
  const table = `${quoteIdentifier(schema)}.${quoteIdentifier(migrationTable)}`;
  const { rows } = await query(`SELECT name FROM ${table} ORDER BY timestamp, name`);
  return rows.map((row) => String(row.name));
}

async function tableExists(query: PostgresQuery, schema: string, table: string): Promise<boolean> {
  const { rows } = await query(
    `SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`,
    [schema, table],
  );
  return rows.length > 0;
}

function migrationFailed(
  options: PostgresMigrationOptions,
  version: string | undefined,
  reason: string,
  cause?: unknown,
): LunationError {
  return new LunationError(
    'migration-failed',
    `PostgreSQL schema "${options.schema}" migration${version ? ` ${version}` : ''} of ${options.owner} failed: ${reason}; the schema keeps its previous version`,
    cause === undefined ? {} : { cause },
  );
}
