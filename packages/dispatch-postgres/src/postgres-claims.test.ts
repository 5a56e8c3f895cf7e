import { type DispatchClaim, type Submission, systemClock } from '@lunation/contract';
import { expectLunationError, makeSubmission, sleep, uniqueId } from '@lunation/dispatch-testkit';
import { describe, expect, it } from 'vitest';
import { testDispatchers } from './__fixtures__/test-dispatchers.js';
import type { PostgresDispatcher } from './postgres-dispatcher.js';

const dispatchers = testDispatchers();

describe('PostgresDispatcher claims under contention', () => {
  it('never waits for a thread row another transaction holds (a submission waiting on the job would deadlock)', async () => {
    const dispatcher = await dispatchers.open();
    const threadId = uniqueId('thread');
    await dispatcher.submit(makeSubmission(threadId));
    const holder = await dispatchers.admin().connect();
    try {
      await holder.query('BEGIN');
      await holder.query(
        `SELECT 1 FROM "${dispatcher.schema}".dispatch_threads WHERE thread_id = $1 FOR UPDATE`,
        [threadId],
      );
      expect(await dispatcher.claim({ workerId: 'w1', waitMs: 300 })).toBeUndefined();
      await holder.query('COMMIT');
    } finally {
      holder.release();
    }
    const claim = await dispatcher.claim({ workerId: 'w1', waitMs: 2_000 });
    expect(claim).toEqual(expect.objectContaining({ threadId, attempt: 1 }));
  });

  it('workers on two instances race submissions, claims and completions: each submission runs once, in order', async () => {
    const dispatcher = await dispatchers.open();
    const sibling = await dispatchers.open({ schema: dispatcher.schema });
    const threads = [uniqueId('thread'), uniqueId('thread'), uniqueId('thread'), uniqueId('thread')];
    const submitted = new Map<string, string[]>(threads.map((threadId) => [threadId, []]));
    const processed = new Map<string, string[]>(threads.map((threadId) => [threadId, []]));
    const rounds = 12;
    const stop = new AbortController();
    const work = async (instance: PostgresDispatcher, name: string) => {
      while (!stop.signal.aborted) {
        const claim = await instance.claim({ workerId: name, waitMs: 200, signal: stop.signal });
        if (claim === undefined) continue;
        const entries = await instance.pending(claim.threadId);
        processed.get(claim.threadId)!.push(...entries.map((entry) => entry.id));
        await instance.acknowledge(
          claim.threadId,
          entries.map((entry) => entry.id),
        );
        await instance.complete(claim);
      }
    };
    const workers = [dispatcher, sibling, dispatcher, sibling].map((instance, index) =>
      work(instance, `w${index}`),
    );
    for (let round = 0; round < rounds; round++) {
      const batch: Submission[] = threads.map((threadId) =>
        makeSubmission(threadId, { text: `round ${round}` }),
      );
      for (const submission of batch) submitted.get(submission.threadId)!.push(submission.id);
      await Promise.all(
        batch.map((submission, index) => (index % 2 === 0 ? dispatcher : sibling).submit(submission)),
      );
    }
    const deadline = Date.now() + 15_000;
    while ([...processed.values()].flat().length < threads.length * rounds && Date.now() < deadline)
      await sleep(20);
    stop.abort();
    await Promise.all(workers);
    for (const threadId of threads) expect(processed.get(threadId)).toEqual(submitted.get(threadId));
    expect((await dispatcher.depth()).pending).toBe(0);
  });

  it('racing claims never take more of a tenant than its cap', async () => {
    const dispatcher = await dispatchers.open({ maxActivePerResource: 2 });
    const sibling = await dispatchers.open({ maxActivePerResource: 2, schema: dispatcher.schema });
    for (let index = 0; index < 5; index++) {
      await dispatcher.submit(makeSubmission(uniqueId('a'), { resourceId: 'tenant-a' }));
    }
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        (index % 2 === 0 ? dispatcher : sibling).claim({
          workerId: `w${index}`,
          lockMs: 30_000,
          waitMs: 300,
        }),
      ),
    );
    const taken = claims.filter((claim): claim is DispatchClaim => claim !== undefined);
    expect(taken.map((claim) => claim.resourceId)).toEqual(['tenant-a', 'tenant-a']);
    expect((await sibling.depth()).byResource['tenant-a']).toEqual({
      pending: 5,
      active: 2,
      deadLettered: 0,
    });
    await dispatcher.handBack(taken[0]!);
    expect((await sibling.claim({ workerId: 'w9', waitMs: 2_000 }))?.resourceId).toBe('tenant-a');
  });
});

describe('PostgresDispatcher lost claims', () => {
  it('never dead-letters a thread for lost claims; lost_claims counts them for operators until it completes', async () => {
    const dispatcher = await dispatchers.open();
    const threadId = uniqueId('thread');
    await dispatcher.submit(makeSubmission(threadId, { resourceId: 'tenant-a' }));
    const lostClaims = async () =>
      (
        await dispatchers
          .admin()
          .query(`SELECT lost_claims FROM "${dispatcher.schema}".dispatch_threads WHERE thread_id = $1`, [
            threadId,
          ])
      ).rows[0].lost_claims as number;
    for (let round = 0; round < 12; round++) {
      const claim = await dispatcher.claim({ workerId: `dies-${round}`, lockMs: 100, waitMs: 2_000 });
      expect(claim).toEqual(expect.objectContaining({ threadId, attempt: 1 }));
      await sleep(200);
    }
    const claim = await dispatcher.claim({ workerId: 'next', waitMs: 2_000 });
    expect(claim).toEqual(expect.objectContaining({ threadId, attempt: 1 }));
    expect(await lostClaims()).toBe(12);
    expect(await dispatcher.deadLetters()).toEqual([]);
    expect((await dispatcher.depth()).byResource['tenant-a']).toEqual({
      pending: 1,
      active: 1,
      deadLettered: 0,
    });
    await dispatcher.acknowledge(
      threadId,
      (await dispatcher.pending(threadId)).map((entry) => entry.id),
    );
    await dispatcher.complete(claim!);
    expect(await lostClaims()).toBe(0);
  });

  it('a claim whose pg-boss job was failed by pg-boss (its 24 h expiry) is lost, and the thread comes back', async () => {
    // The extensions of a claim check its pg-boss attempt every 10 s (monotonic time, moved on here by hand).
    let skewMs = 0;
    const clock = { ...systemClock, monotonic: () => systemClock.monotonic() + skewMs };
    const dispatcher = await dispatchers.open({ clock });
    const threadId = uniqueId('thread');
    const submission = makeSubmission(threadId);
    await dispatcher.submit(submission);
    const claim = (await dispatcher.claim({ workerId: 'w1', lockMs: 300 }))!;
    // What pg-boss's monitor does to a job active past its expireInSeconds.
    await dispatchers
      .admin()
      .query(
        `UPDATE "${dispatcher.schema}".job SET state = 'failed', completed_on = now() WHERE singleton_key = $1`,
        [threadId],
      );
    // Within 10 s of the claim, an extension is one statement on the thread's row, which still holds the claim.
    await dispatcher.extend(claim);
    skewMs = 10_000;
    await expectLunationError(dispatcher.extend(claim), 'claim-lost');
    await expectLunationError(dispatcher.complete(claim), 'claim-lost');
    const again = await dispatcher.claim({ workerId: 'w2', waitMs: 3_000 });
    expect(again).toEqual(expect.objectContaining({ threadId, attempt: 1 }));
    expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual([submission.id]);
  });
});
