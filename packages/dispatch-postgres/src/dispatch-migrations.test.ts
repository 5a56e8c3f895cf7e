import { migratePostgresSchema } from '@lunation/contract/postgres-utils';
import { expectLunationError, makeSubmission, uniqueId } from '@lunation/dispatch-testkit';
import { describe, expect, it } from 'vitest';
import { postgresUrl, uniqueSchema } from './__fixtures__/postgres-test-server.js';
import { testDispatchers } from './__fixtures__/test-dispatchers.js';
import {
  advisoryLockKey,
  dispatchMigrations,
  latestSchemaVersion,
  migrationLockTableName,
  migrationTableName,
} from './dispatch-migrations.js';
import { PostgresDispatcher } from './postgres-dispatcher.js';

const dispatchers = testDispatchers();

describe('PostgresDispatcher migrations', () => {
  it('six processes opening a new schema at once migrate it once, pg-boss included', async () => {
    const schema = uniqueSchema();
    // Each with its own pool, as separate processes would be.
    const opened = await Promise.all(Array.from({ length: 6 }, () => dispatchers.open({ schema })));
    const admin = dispatchers.admin();
    const { rows: migrations } = await admin.query(
      `SELECT name FROM "${schema}".${migrationTableName} ORDER BY name`,
    );
    expect(migrations.map((row) => row.name)).toEqual([
      '001_initial',
      '002_run_event_fences',
      latestSchemaVersion,
    ]);
    const { rows: versions } = await admin.query(`SELECT count(*)::int AS count FROM "${schema}".version`);
    expect(versions[0].count).toBe(1);
    const { rows: queues } = await admin.query(`SELECT name, policy FROM "${schema}".queue`);
    expect(queues).toEqual([{ name: 'lunation_threads', policy: 'exclusive' }]);
    const threadId = uniqueId('thread');
    await opened[0]!.submit(makeSubmission(threadId));
    expect((await opened[5]!.claim({ workerId: 'w1', waitMs: 2_000 }))?.threadId).toBe(threadId);
  });

  it('opening a migrated schema again changes nothing', async () => {
    const first = await dispatchers.open();
    const threadId = uniqueId('thread');
    await first.submit(makeSubmission(threadId));
    const again = await dispatchers.open({ schema: first.schema });
    expect((await again.pending(threadId)).length).toBe(1);
    const { rows } = await dispatchers
      .admin()
      .query(`SELECT name FROM "${first.schema}".${migrationTableName} ORDER BY name`);
    expect(rows.map((row) => row.name)).toEqual(['001_initial', '002_run_event_fences', latestSchemaVersion]);
  });

  it('refuses a schema migrated by a newer version of the package with migration-failed', async () => {
    const first = await dispatchers.open();
    await dispatchers
      .admin()
      .query(
        `INSERT INTO "${first.schema}".${migrationTableName} (name, timestamp) VALUES ('999_future', now()::text)`,
      );
    const error = await expectLunationError(
      PostgresDispatcher.open({ connectionString: postgresUrl, schema: first.schema }),
      'migration-failed',
    );
    expect(error.message).toContain('upgrade the package');
    expect(error.message).toContain(first.schema);
  });

  it('003_cancels_per_run keeps a pending cancel request; afterwards a thread holds one per run', async () => {
    const schema = uniqueSchema();
    const client = await dispatchers.admin().connect();
    try {
      // A schema as the previous release left it: one cancel request per thread.
      await migratePostgresSchema((text, values) => client.query(text, values as unknown[] | undefined), {
        schema,
        migrations: dispatchMigrations(schema),
        migrationTable: migrationTableName,
        lockTable: migrationLockTableName,
        lockKey: advisoryLockKey,
        owner: '@lunation/dispatch-postgres',
        target: '002_run_event_fences',
      });
      await client.query(
        `INSERT INTO "${schema}".dispatch_cancels (thread_id, id, run_id, reason, requested_at)
         VALUES ('t1', 'old', 'run-2', 'stop run 2', 1)`,
      );
    } finally {
      client.release();
    }
    const dispatcher = await dispatchers.open({ schema });
    expect(await dispatcher.cancelRequests('t1')).toEqual([
      { id: 'old', threadId: 't1', runId: 'run-2', reason: 'stop run 2', requestedAt: 1 },
    ]);
    const first = await dispatcher.requestCancel({ threadId: 't1', runId: 'run-1', reason: 'stop run 1' });
    expect((await dispatcher.cancelRequests('t1')).map((request) => request.id)).toEqual(['old', first.id]);
    expect(await dispatcher.clearCancel('t1', 'old')).toBe(true);
    expect(await dispatcher.cancelRequests('t1')).toEqual([first]);
  });

  it('shares a database: two schemas are two independent dispatchers', async () => {
    const [one, two] = [await dispatchers.open(), await dispatchers.open()];
    const threadId = uniqueId('thread');
    await one.submit(makeSubmission(threadId));
    expect(await two.claim({ workerId: 'w1', waitMs: 300 })).toBeUndefined();
    expect((await one.claim({ workerId: 'w1' }))?.threadId).toBe(threadId);
  });
});
