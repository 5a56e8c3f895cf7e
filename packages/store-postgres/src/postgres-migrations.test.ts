import { LunationError } from '@lunation/contract';
import { makeRunRecord, makeUserMessage } from '@lunation/store-testkit';
import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  dropSchema,
  postgresUrl,
  sharedTestPostgres,
  uniqueSchema,
} from './__fixtures__/postgres-test-server.js';
import {
  latestSchemaVersion,
  migrate,
  migrationLockTableName,
  migrationTableName,
  postgresMigrations,
} from './postgres-migrations.js';
import { PostgresStore } from './postgres-store.js';

const server = sharedTestPostgres();
let admin: pg.Pool;
let schema: string;

beforeAll(() => server.connect());
beforeEach(() => {
  admin = server.connected();
  schema = uniqueSchema();
});
afterEach(() => dropSchema(admin, schema));
afterAll(() => server.end());

/** Migrates the schema to `version` through a Kysely instance on the admin pool (left open). */
async function schemaAtVersion(version: string): Promise<void> {
  await migrate(new Kysely<unknown>({ dialect: new PostgresDialect({ pool: admin }) }), schema, version);
}

async function appliedMigrations(): Promise<string[]> {
  const { rows } = await admin.query<{ name: string }>(
    `SELECT name FROM "${schema}".lunation_migration ORDER BY name`,
  );
  return rows.map((row) => row.name);
}

async function functionNames(): Promise<string[]> {
  const { rows } = await admin.query<{ name: string }>(
    'SELECT p.proname AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 ORDER BY 1',
    [schema],
  );
  return rows.map((row) => row.name);
}

describe('PostgreSQL migrations', () => {
  it('has every version, the latest last', () => {
    expect(Object.keys(postgresMigrations(schema))).toEqual([
      '001_initial',
      '002_store_functions',
      '003_lease_incarnation',
      '004_batched_calls',
      '005_commit_fences',
      '006_same_owner_takeover',
    ]);
    expect(latestSchemaVersion).toBe('006_same_owner_takeover');
  });

  it('creates the schema, its tables, indexes and functions, and records the version', async () => {
    const store = await PostgresStore.open({ connectionString: postgresUrl, schema });
    try {
      expect(await store.schemaVersion()).toBe(latestSchemaVersion);
    } finally {
      await store.close();
    }
    const { rows } = await admin.query<{ name: string }>(
      'SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY 1',
      [schema],
    );
    expect(rows.map((row) => row.name)).toEqual([
      'leases',
      'lunation_migration',
      'lunation_migration_lock',
      'messages',
      'runs',
      'threads',
      'tool_executions',
    ]);
    expect(await appliedMigrations()).toEqual(Object.keys(postgresMigrations(schema)));
    expect(await functionNames()).toEqual([
      'acquire_lease',
      'begin_tool_execution',
      'commit_checkpoint',
      'complete_tool_execution',
      'create_thread',
      'delete_thread',
      'load_checkpoint',
      'release_lease',
      'run_batch',
    ]);
  });

  it('upgrades a version-1 schema in place, keeping its data', async () => {
    await schemaAtVersion('001_initial');
    expect(await functionNames()).toEqual([]);
    const s = `"${schema}"`;
    const run = makeRunRecord({ threadId: 't1', runId: 'r1' });
    const message = makeUserMessage('hello');
    await admin.query(
      `INSERT INTO ${s}.threads (id, resource_id, metadata, message_count, created_at, updated_at, state)
       VALUES ('t1', 'user-1', '{"title":"old"}', 1, 1000, 2000, '{"mood":"calm"}')`,
    );
    await admin.query(
      `INSERT INTO ${s}.messages (thread_id, seq, message, run_id, created_at) VALUES ('t1', 1, $1, 'r1', 1000)`,
      [JSON.stringify(message)],
    );
    await admin.query(
      `INSERT INTO ${s}.runs (run_id, thread_id, record, created_at) VALUES ('r1', 't1', $1, $2)`,
      [JSON.stringify(run), run.createdAt],
    );
    await admin.query(
      `INSERT INTO ${s}.leases (thread_id, token, owner, run_id, expires_at) VALUES ('t1', 7, 'old', 'r1', NULL)`,
    );

    const store = await PostgresStore.open({ connectionString: postgresUrl, schema });
    try {
      expect(await store.schemaVersion()).toBe(latestSchemaVersion);
      expect(await store.loadCheckpoint('t1')).toEqual({
        thread: {
          id: 't1',
          resourceId: 'user-1',
          metadata: { title: 'old' },
          messageCount: 1,
          createdAt: 1000,
          updatedAt: 2000,
        },
        messages: [{ threadId: 't1', seq: 1, message, runId: 'r1', createdAt: 1000 }],
        threadState: { mood: 'calm' },
        latestRun: run,
      });
      const lease = await store.acquireLease({ threadId: 't1', owner: 'new', runId: 'r2', ttlMs: 10_000 });
      expect(lease.token).toBe(8);
      expect(
        await store.commit({
          threadId: 't1',
          expectedMessageCount: 1,
          leaseToken: 8,
          messages: [makeUserMessage('again')],
        }),
      ).toEqual({ messageCount: 2 });
    } finally {
      await store.close();
    }
    expect(await appliedMigrations()).toEqual(Object.keys(postgresMigrations(schema)));
  });

  it('upgrades a version-2 schema in place: a held lease counts as renewed when it expires, with no incarnation', async () => {
    await schemaAtVersion('002_store_functions');
    const expiresAt = Date.now() + 60_000;
    await admin.query(
      `INSERT INTO "${schema}".leases (thread_id, token, owner, run_id, expires_at) VALUES ('t3', 4, 'server', 'r1', $1)`,
      [expiresAt],
    );
    const store = await PostgresStore.open({ connectionString: postgresUrl, schema });
    try {
      expect(await store.getLease('t3')).toEqual({
        threadId: 't3',
        owner: 'server',
        runId: 'r1',
        token: 4,
        renewedAt: expiresAt,
        expiresAt,
      });
      // A lease from before incarnations is waited out, never taken over by the owner's next life.
      await expect(
        store.acquireLease({
          threadId: 't3',
          owner: 'server',
          incarnation: 'next',
          runId: 'r2',
          ttlMs: 1_000,
        }),
      ).rejects.toMatchObject({ code: 'thread-busy' });
    } finally {
      await store.close();
    }
    expect(await functionNames()).toContain('acquire_lease');
  });

  it("continues a schema that kysely's Migrator migrated (as releases before the shared runner did)", async () => {
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: admin }) });
    const released = Object.entries(postgresMigrations(schema)).slice(0, 3);
    const migrator = new Migrator({
      db,
      provider: {
        getMigrations: async () =>
          Object.fromEntries(
            released.map(([name, text]) => [
              name,
              { up: async (on: Kysely<unknown>) => void (await sql.raw(text).execute(on)) },
            ]),
          ),
      },
      migrationTableSchema: schema,
      migrationTableName,
      migrationLockTableName,
    });
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await appliedMigrations()).toEqual([
      '001_initial',
      '002_store_functions',
      '003_lease_incarnation',
    ]);
    const store = await PostgresStore.open({ connectionString: postgresUrl, schema });
    try {
      expect(await store.schemaVersion()).toBe(latestSchemaVersion);
      await store.createThread({ id: 't1' });
      expect((await store.getThread('t1'))?.messageCount).toBe(0);
    } finally {
      await store.close();
    }
    expect(await appliedMigrations()).toEqual(Object.keys(postgresMigrations(schema)));
  });

  it('fails with migration-failed and leaves the schema untouched when a newer version migrated it', async () => {
    await schemaAtVersion('001_initial');
    await admin.query(
      `INSERT INTO "${schema}".lunation_migration (name, timestamp) VALUES ('099_from_the_future', $1)`,
      [new Date().toISOString()],
    );
    const store = new PostgresStore({ connectionString: postgresUrl, schema });
    const error = await store.init().then(
      () => expect.fail('init should fail'),
      (reason: unknown) => reason,
    );
    expect(LunationError.hasCode(error, 'migration-failed')).toBe(true);
    expect((error as LunationError).message).toContain('099_from_the_future');
    expect((error as LunationError).message).toContain('upgrade the package');
    await expect(store.getThread('t1')).rejects.toMatchObject({ code: 'migration-failed' });
    await store.close();
    expect(await functionNames()).toEqual([]);
    expect(await appliedMigrations()).toEqual(['001_initial', '099_from_the_future']);
  });

  it('lets several stores with their own pools open one new schema at once, migrating it once', async () => {
    const stores = await Promise.all(
      Array.from({ length: 4 }, () => PostgresStore.open({ connectionString: postgresUrl, schema })),
    );
    try {
      for (const store of stores) expect(await store.schemaVersion()).toBe(latestSchemaVersion);
      await stores[0]!.createThread({ id: 't1' });
      expect(await stores[3]!.getThread('t1')).toBeDefined();
    } finally {
      for (const store of stores) await store.close();
    }
    expect(await appliedMigrations()).toEqual(Object.keys(postgresMigrations(schema)));
  });

  it('rolls back every pending migration when one fails', async () => {
    await schemaAtVersion('001_initial');
    // A function of that name already exists, so 002 fails half-way through.
    await admin.query(
      `CREATE FUNCTION "${schema}".delete_thread(p_thread_id text) RETURNS boolean LANGUAGE sql AS 'SELECT true'`,
    );
    const error = await PostgresStore.open({ connectionString: postgresUrl, schema }).catch(
      (reason: unknown) => reason,
    );
    expect(LunationError.hasCode(error, 'migration-failed')).toBe(true);
    expect((error as LunationError).message).toContain('002_store_functions');
    expect(await functionNames()).toEqual(['delete_thread']);
    expect(await appliedMigrations()).toEqual(['001_initial']);
  });

  it('migrates while other apps sharing the database create and drop their schemas', async () => {
    // Kysely's own introspector reads every schema and fails when one is dropped under it.
    let churning = true;
    const churn = (async () => {
      for (let round = 0; churning; round++) {
        const other = `${schema}_other_${round % 4}`;
        await admin.query(`CREATE SCHEMA IF NOT EXISTS "${other}"`);
        await admin.query(`CREATE TABLE IF NOT EXISTS "${other}".t (id int)`);
        await admin.query(`DROP SCHEMA IF EXISTS "${other}" CASCADE`);
      }
    })();
    try {
      for (let attempt = 0; attempt < 25; attempt++) {
        const target = `${schema}_m${attempt}`;
        try {
          await migrate(new Kysely<unknown>({ dialect: new PostgresDialect({ pool: admin }) }), target);
        } finally {
          await dropSchema(admin, target);
        }
      }
    } finally {
      churning = false;
      await churn;
    }
  });
});
