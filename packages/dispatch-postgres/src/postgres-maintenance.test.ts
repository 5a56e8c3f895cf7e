import { makeEvents, makeSubmission, sleep, uniqueId } from '@lunation/dispatch-testkit';
import { describe, expect, it } from 'vitest';
import { testDispatchers } from './__fixtures__/test-dispatchers.js';

const dispatchers = testDispatchers();

/** Polls `read` every 25 ms until it returns `expected`; the test fails with the last value after `timeoutMs`. */
async function until<T>(read: () => Promise<T>, expected: T, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (JSON.stringify(value) !== JSON.stringify(expected) && Date.now() < deadline) {
    await sleep(25);
    value = await read();
  }
  expect(value).toEqual(expected);
}

describe('PostgresDispatcher maintenance', () => {
  it('deletes expired run event logs from its tables', async () => {
    const dispatcher = await dispatchers.open({ maintenanceIntervalMs: 50 });
    const [expiring, kept] = [uniqueId('run'), uniqueId('run')];
    await dispatcher.appendEvents(expiring, makeEvents(expiring, 3));
    await dispatcher.appendEvents(kept, makeEvents(kept, 2));
    await dispatcher.endEvents(expiring, { ttlMs: 100 });
    await dispatcher.endEvents(kept, { ttlMs: 60_000 });
    const rows = async () => {
      const { rows } = await dispatchers.admin().query(
        `SELECT run_id, count(*)::int AS events FROM "${dispatcher.schema}".dispatch_run_events
         WHERE run_id = ANY($1) GROUP BY run_id`,
        [[expiring, kept]],
      );
      const { rows: logs } = await dispatchers
        .admin()
        .query(`SELECT run_id FROM "${dispatcher.schema}".dispatch_run_logs WHERE run_id = ANY($1)`, [
          [expiring, kept],
        ]);
      return { events: rows, logs: logs.map((row) => row.run_id) };
    };
    await until(rows, { events: [{ run_id: kept, events: 2 }], logs: [kept] });
  });

  it('forgets acknowledged ids after the dedupe window: the same id is then a new submission', async () => {
    const dispatcher = await dispatchers.open({ maintenanceIntervalMs: 50, dedupeWindowMs: 150 });
    const threadId = uniqueId('thread');
    const submission = makeSubmission(threadId);
    await dispatcher.submit(submission);
    await dispatcher.acknowledge(threadId, [submission.id]);
    expect(await dispatcher.submit(submission)).toEqual({ duplicate: true, deadLettered: false });
    const remembered = async () =>
      (
        await dispatchers
          .admin()
          .query(`SELECT count(*)::int AS ids FROM "${dispatcher.schema}".dispatch_acknowledged`)
      ).rows[0].ids as number;
    await until(remembered, 0);
    expect(await dispatcher.submit(submission)).toEqual({ duplicate: false, deadLettered: false });
    expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual([submission.id]);
  });

  it('wakes a thread whose pg-boss job is gone while it still has submissions', async () => {
    const dispatcher = await dispatchers.open({ maintenanceIntervalMs: 50 });
    const threadId = uniqueId('thread');
    const submission = makeSubmission(threadId, { resourceId: 'tenant-a' });
    await dispatcher.submit(submission);
    // What pg-boss's retention does to a job left unclaimed past its retentionSeconds.
    await dispatchers
      .admin()
      .query(`DELETE FROM "${dispatcher.schema}".job WHERE singleton_key = $1`, [threadId]);
    const claim = await dispatcher.claim({ workerId: 'w1', waitMs: 5_000 });
    expect(claim).toEqual(expect.objectContaining({ threadId, resourceId: 'tenant-a', attempt: 1 }));
    expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual([submission.id]);
  });
});
