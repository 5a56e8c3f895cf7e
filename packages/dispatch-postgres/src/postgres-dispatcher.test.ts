import { type Clock, systemClock } from '@lunation/contract';
import { expectLunationError, makeEvents, makeSubmission, sleep, uniqueId } from '@lunation/dispatch-testkit';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { postgresUrl, uniqueSchema } from './__fixtures__/postgres-test-server.js';
import { testDispatchers } from './__fixtures__/test-dispatchers.js';
import type { PostgresDispatcherPool } from './postgres-connection.js';
import { PostgresDispatcher } from './postgres-dispatcher.js';
import { openContext } from './postgres-dispatcher-options.js';

const dispatchers = testDispatchers();

/** The pg-boss jobs of a thread, oldest first. */
async function jobsOf(schema: string, threadId: string) {
  const { rows } = await dispatchers.admin().query(
    `SELECT id, name, state, retry_count, group_id, policy FROM "${schema}".job
     WHERE singleton_key = $1 ORDER BY created_on, id`,
    [threadId],
  );
  return rows as {
    id: string;
    name: string;
    state: string;
    retry_count: number;
    group_id: string;
    policy: string;
  }[];
}

describe('PostgresDispatcher data layout', () => {
  it('keeps one pg-boss job per thread with work; the claim token is its id and retry count', async () => {
    const dispatcher = await dispatchers.open();
    const { schema } = dispatcher;
    const threadId = uniqueId('thread');
    const first = makeSubmission(threadId, { resourceId: 'tenant-a' });
    await dispatcher.submit(first);
    await dispatcher.submit(makeSubmission(threadId, { resourceId: 'tenant-a' }));
    const [job] = await jobsOf(schema, threadId);
    expect(await jobsOf(schema, threadId)).toEqual([
      {
        id: job!.id,
        name: 'lunation_threads',
        state: 'created',
        retry_count: 0,
        group_id: 'tenant-a',
        policy: 'exclusive',
      },
    ]);
    const { rows: inbox } = await dispatchers
      .admin()
      .query(
        `SELECT submission_id, resource_id FROM "${schema}".dispatch_inbox WHERE thread_id = $1 ORDER BY seq`,
        [threadId],
      );
    expect(inbox.map((row) => row.resource_id)).toEqual(['tenant-a', 'tenant-a']);
    expect(inbox[0].submission_id).toBe(first.id);

    const claim = (await dispatcher.claim({ workerId: 'w1', lockMs: 30_000 }))!;
    expect(claim.token).toBe(`${job!.id}:0`);
    const { rows: threads } = await dispatchers.admin().query(
      `SELECT claim_token, worker_id, claimed_at::float8 AS claimed_at, lock_expires_at::float8 AS lock_expires_at
         FROM "${schema}".dispatch_threads WHERE thread_id = $1`,
      [threadId],
    );
    expect(threads).toEqual([
      {
        claim_token: claim.token,
        worker_id: 'w1',
        claimed_at: claim.claimedAt,
        lock_expires_at: claim.claimedAt + 30_000,
      },
    ]);
    expect((await jobsOf(schema, threadId)).map((row) => row.state)).toEqual(['active']);
    await dispatcher.submit(makeSubmission(threadId));
    expect(await jobsOf(schema, threadId)).toHaveLength(1);

    expect(await dispatcher.complete(claim)).toEqual({ rewoken: true });
    expect((await jobsOf(schema, threadId)).map((row) => row.state)).toEqual(['completed', 'created']);
    await dispatcher.handBack((await dispatcher.claim({ workerId: 'w2' }))!);
    const again = (await dispatcher.claim({ workerId: 'w3' }))!;
    const jobs = await jobsOf(schema, threadId);
    // A hand-back cancels the attempt and resumes the same job: pg-boss counts the claim, the thread does not.
    expect(jobs.map((row) => [row.state, row.retry_count])).toEqual([
      ['completed', 0],
      ['active', 1],
    ]);
    expect(again).toEqual(expect.objectContaining({ attempt: 1, token: `${jobs[1]!.id}:1` }));
  });

  it('keeps its tables and pg-boss in its schema, and dropSchema removes them', async () => {
    const schema = uniqueSchema();
    const dispatcher = await PostgresDispatcher.open({ connectionString: postgresUrl, schema });
    const tables = async () =>
      (
        await dispatchers
          .admin()
          .query('SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename', [schema])
      ).rows.map((row) => row.tablename as string);
    expect(await tables()).toEqual(
      expect.arrayContaining([
        'dispatch_acknowledged',
        'dispatch_cancels',
        'dispatch_counters',
        'dispatch_inbox',
        'dispatch_run_events',
        'dispatch_run_logs',
        'dispatch_threads',
        'job',
        'lunation_dispatch_migration',
        'queue',
        'version',
      ]),
    );
    await dispatcher.dropSchema();
    expect(await tables()).toEqual([]);
    await expectLunationError(dispatcher.depth(), 'store-unavailable');
  });
});

describe('PostgresDispatcher connections', () => {
  it('works on an injected pool and leaves it open', async () => {
    const pool = new pg.Pool({ connectionString: postgresUrl, max: 4 });
    dispatchers.cleanup(() => pool.end());
    const schema = uniqueSchema();
    const dispatcher = await PostgresDispatcher.open({
      pool: pool as unknown as PostgresDispatcherPool,
      schema,
      concurrency: 1,
    });
    const sibling = await dispatchers.open({ schema });
    const threadId = uniqueId('thread');
    const waiting = dispatcher.claim({ workerId: 'w1', waitMs: 5_000 });
    await sibling.submit(makeSubmission(threadId));
    const claim = (await waiting)!;
    expect(claim.threadId).toBe(threadId);
    await dispatcher.close();
    // close() handed the claim back, and the pool still answers.
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    expect((await sibling.claim({ workerId: 'w2', waitMs: 3_000 }))?.threadId).toBe(threadId);
    await expectLunationError(dispatcher.submit(makeSubmission(threadId)), 'store-unavailable');
  });

  it('answers store-unavailable (retryable) when the server cannot be reached', async () => {
    const dispatcher = new PostgresDispatcher({ connectionString: 'postgres://postgres@127.0.0.1:1/test' });
    const error = await expectLunationError(
      dispatcher.submit(makeSubmission(uniqueId('thread'))),
      'store-unavailable',
    );
    expect(error.isRetryable).toBe(true);
    await dispatcher.close();
    await expectLunationError(
      PostgresDispatcher.open({ connectionString: 'postgres://postgres@127.0.0.1:1/test' }),
      'store-unavailable',
    );
  });

  it('rejects bad options with invalid-argument', () => {
    const bad: unknown[] = [
      undefined,
      {},
      { connectionString: '' },
      { connectionString: postgresUrl, schema: 'Upper' },
      { connectionString: postgresUrl, schema: `a${'b'.repeat(50)}` },
      { connectionString: postgresUrl, schema: '1abc' },
      { connectionString: postgresUrl, queueName: 'has space' },
      { connectionString: postgresUrl, maxConnections: 2 },
      { connectionString: postgresUrl, concurrency: 0 },
      { connectionString: postgresUrl, concurrency: 8, maxConnections: 10 },
      { connectionString: postgresUrl, lockMs: 0 },
      { connectionString: postgresUrl, pollIntervalMs: 1.5 },
      { connectionString: postgresUrl, maxLostClaims: 0 },
      { connectionString: postgresUrl, maxAttempts: 0 },
      { pool: {} },
    ];
    for (const options of bad) {
      let caught: unknown;
      try {
        new PostgresDispatcher(options as never);
      } catch (error) {
        caught = error;
      }
      expect((caught as { code?: string } | undefined)?.code, JSON.stringify(options)).toBe(
        'invalid-argument',
      );
    }
  });
});

describe('PostgresDispatcher pool sizing', () => {
  it('opens a pool sized for its concurrency: two connections per claim plus three', async () => {
    for (const [options, max] of [
      [{}, 11],
      [{ concurrency: 8 }, 19],
      [{ concurrency: 8, maxConnections: 11 }, 11],
    ] as const) {
      const { ownedPool } = openContext({ connectionString: postgresUrl, ...options }, () => {});
      expect(ownedPool?.options.max, JSON.stringify(options)).toBe(max);
      await ownedPool?.end();
    }
  });

  it('refuses a pool that cannot hold its claims beside the listening, pg-boss and maintenance connections', async () => {
    const error = await expectLunationError(
      (async () =>
        new PostgresDispatcher({ connectionString: postgresUrl, concurrency: 8, maxConnections: 8 }))(),
      'invalid-argument',
    );
    expect(error.message).toMatch(
      /maxConnections is 8 connections, but .* up to 8 claims .* needs at least 11/,
    );
    expect(error.details).toEqual({ connections: 8, concurrency: 8, needed: 11 });
    // Without concurrency, a pool must hold one claim beside the three connections the dispatcher reserves.
    await expectLunationError(
      (async () => new PostgresDispatcher({ connectionString: postgresUrl, maxConnections: 3 }))(),
      'invalid-argument',
    );
    const pool = new pg.Pool({ connectionString: postgresUrl, max: 6 });
    try {
      const injected = await expectLunationError(
        (async () =>
          new PostgresDispatcher({ pool: pool as unknown as PostgresDispatcherPool, concurrency: 4 }))(),
        'invalid-argument',
      );
      expect(injected.message).toMatch(/The injected pool has max 6 connections/);
      const fits = new PostgresDispatcher({
        pool: pool as unknown as PostgresDispatcherPool,
        concurrency: 3,
      });
      await fits.close();
    } finally {
      await pool.end();
    }
  });
});

describe('PostgresDispatcher run event logs', () => {
  it('an append after a log expired starts a new log from id 1; an end after it ends an empty one, closed to appends', async () => {
    const dispatcher = await dispatchers.open();
    const [runId, ended] = [uniqueId('run'), uniqueId('run')];
    await dispatcher.appendEvents(runId, makeEvents(runId, 3));
    await dispatcher.appendEvents(ended, makeEvents(ended, 2));
    await dispatcher.endEvents(runId, { ttlMs: 100 });
    await dispatcher.endEvents(ended, { ttlMs: 100 });
    await sleep(300);
    const fresh = makeEvents(runId, 2, 10);
    expect(await dispatcher.appendEvents(runId, fresh)).toEqual(['1', '2']);
    expect(await dispatcher.readEvents(runId)).toEqual({
      events: [
        { id: '1', event: fresh[0] },
        { id: '2', event: fresh[1] },
      ],
      ended: false,
    });
    await dispatcher.endEvents(ended, { ttlMs: 60_000 });
    expect(await dispatcher.readEvents(ended)).toEqual({ events: [], ended: true });
    await expectLunationError(dispatcher.appendEvents(ended, makeEvents(ended, 1)), 'stale-lease');
  });
});

describe('PostgresDispatcher on an injected clock and id source', () => {
  it('names cancel requests from its ids and runs claim waits and their timers on its clock', async () => {
    let counter = 0;
    const ids = { id: () => `injected-${++counter}`, random: () => 0.5 };
    // The host's time and timers, each use noted.
    const readings: number[] = [];
    const timers: number[] = [];
    const clock: Clock = {
      ...systemClock,
      now: () => readings[readings.push(systemClock.now()) - 1] as number,
      setTimeout: (callback, ms) => {
        timers.push(ms);
        return systemClock.setTimeout(callback, ms);
      },
    };
    const dispatcher = await dispatchers.open({ clock, ids, pollIntervalMs: 50 });
    const threadId = uniqueId('clock');
    const request = await dispatcher.requestCancel({ threadId, reason: 'stop' });
    expect(request.id).toBe('injected-1');
    expect((await dispatcher.cancelRequests(threadId)).map((saved) => saved.id)).toEqual(['injected-1']);

    // Nothing to claim: the claim waits out its 200 ms on the clock, in pauses of at most the poll interval.
    const started = readings.length;
    expect(await dispatcher.claim({ workerId: 'w1', waitMs: 200 })).toBeUndefined();
    expect(readings.length - started).toBeGreaterThanOrEqual(2);
    expect(timers.length).toBeGreaterThanOrEqual(2);
    expect(timers.every((ms) => ms <= 200)).toBe(true);
  });
});
