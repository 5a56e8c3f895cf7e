import type { CancelRequest, RunEventRecord } from '@lunation/contract';
import { collect, eventually, makeEvents, makeSubmission, uniqueId } from '@lunation/dispatch-testkit';
import { describe, expect, it } from 'vitest';
import { testDispatchers } from './__fixtures__/test-dispatchers.js';
import { DispatchChannels } from './dispatch-schema.js';

const dispatchers = testDispatchers();

/**
 * Every dispatcher here polls once a minute at most, and every wait below is far shorter: what arrives in time was
 * carried by a NOTIFY (or by the re-read after the listening connection came back), not by polling.
 */
const noPolling = { pollIntervalMs: 60_000 };

describe('PostgresDispatcher notifications', () => {
  it('a waiting claim, a subscription and a cancel watch on one instance hear another instance at once', async () => {
    const listener = await dispatchers.open(noPolling);
    const writer = await dispatchers.open({ ...noPolling, schema: listener.schema });
    const [threadId, runId] = [uniqueId('thread'), uniqueId('run')];
    const waiting = listener.claim({ workerId: 'w1', waitMs: 10_000 });
    const seen: CancelRequest[] = [];
    const watch = await listener.watchCancel(threadId, (request) => seen.push(request));
    const received: RunEventRecord[] = [];
    const abort = new AbortController();
    const subscription = collect(listener.subscribeEvents(runId, { signal: abort.signal }), {
      timeoutMs: 10_000,
      abort,
      onRecord: (record) => received.push(record),
    });
    await writer.submit(makeSubmission(threadId));
    expect((await waiting)?.threadId).toBe(threadId);
    const events = makeEvents(runId, 3);
    for (let index = 0; index < events.length; index++) {
      await writer.appendEvents(runId, [events[index]!]);
      await eventually(() => received.length === index + 1, 5_000, `event ${index + 1} to arrive`);
    }
    const request = await writer.requestCancel({ threadId, reason: 'stop' });
    await eventually(() => seen.length === 1, 5_000, 'the cancel request to arrive');
    expect(seen).toEqual([request]);
    await writer.endEvents(runId, { ttlMs: 60_000 });
    expect((await subscription).map((record) => record.event)).toEqual(events);
    watch.close();
  });

  it('when the listening connection is killed it reconnects and re-reads: nothing appended meanwhile is missed', async () => {
    const listener = await dispatchers.open(noPolling);
    const writer = await dispatchers.open({ ...noPolling, schema: listener.schema });
    const runId = uniqueId('run');
    const received: RunEventRecord[] = [];
    const abort = new AbortController();
    const subscription = collect(listener.subscribeEvents(runId, { signal: abort.signal }), {
      timeoutMs: 15_000,
      abort,
      onRecord: (record) => received.push(record),
    });
    const events = makeEvents(runId, 4);
    await writer.appendEvents(runId, events.slice(0, 1));
    await eventually(() => received.length === 1, 5_000, 'the first event');
    // The listening connection's last statement is its LISTEN of the run's channel.
    const { rows } = await dispatchers.admin().query(
      `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
       WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()
         AND query LIKE '%' || $1 || '%'`,
      [new DispatchChannels(listener.schema).events(runId)],
    );
    expect(rows).toEqual([{ killed: true }]);
    await writer.appendEvents(runId, events.slice(1, 3));
    await eventually(() => received.length === 3, 10_000, 'the events appended while reconnecting');
    await writer.appendEvents(runId, events.slice(3));
    await writer.endEvents(runId, { ttlMs: 60_000 });
    expect((await subscription).map((record) => record.event)).toEqual(events);
  });
});
