import { type DispatchClaim, dispatchClaimSchema } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { expectLunationError, makeSubmission, sleep, uniqueId } from '../fixtures.js';

/** Claims: one worker per thread, FIFO across threads, waiting, aborts, extend and lost claims. */
export function claimSpec(context: DispatchSpecContext): void {
  describe('claim', () => {
    it('claims a thread with work: its id, tenant, worker, attempt 1, a token and claimedAt', async () => {
      const dispatcher = await context.open();
      const threadId = uniqueId('thread');
      await dispatcher.submit(makeSubmission(threadId, { resourceId: 'tenant-a' }));
      const before = Date.now();
      const claim = await dispatcher.claim({ workerId: 'worker-1', lockMs: 30_000 });
      const after = Date.now();
      expect(dispatchClaimSchema.safeParse(claim).success).toBe(true);
      expect(claim).toEqual({
        threadId,
        resourceId: 'tenant-a',
        workerId: 'worker-1',
        attempt: 1,
        token: expect.any(String),
        claimedAt: expect.any(Number),
      });
      expect(claim!.claimedAt).toBeGreaterThanOrEqual(before - 1_000);
      expect(claim!.claimedAt).toBeLessThanOrEqual(after + 1_000);
    });

    it('resolves undefined when nothing is claimable', async () => {
      const dispatcher = await context.open();
      expect(await dispatcher.claim({ workerId: 'w1' })).toBeUndefined();
      expect(await dispatcher.claim({ workerId: 'w1', waitMs: 100 })).toBeUndefined();
    });

    it('a waiting claim gets a thread submitted while it waits, also from another instance', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      const waiting = dispatcher.claim({ workerId: 'w1', waitMs: context.redeliveryMs + 5_000 });
      await sleep(50);
      await sibling.submit(makeSubmission(threadId));
      expect((await waiting)?.threadId).toBe(threadId);
    });

    it('gives a thread to one worker at a time, whatever arrives meanwhile', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      await dispatcher.submit(makeSubmission(threadId));
      await dispatcher.submit(makeSubmission(threadId));
      const claim = await dispatcher.claim({ workerId: 'w1', lockMs: 30_000 });
      expect(claim?.threadId).toBe(threadId);
      await sibling.submit(makeSubmission(threadId));
      expect(await dispatcher.claim({ workerId: 'w2', waitMs: 100 })).toBeUndefined();
      expect(await sibling.claim({ workerId: 'w3', waitMs: 100 })).toBeUndefined();
      expect((await dispatcher.depth()).active).toBe(1);
    });

    it('racing claims on two instances hand a thread out exactly once', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      await dispatcher.submit(makeSubmission(threadId));
      const claims = await Promise.all(
        Array.from({ length: 8 }, (_, index) =>
          (index % 2 === 0 ? dispatcher : sibling).claim({ workerId: `w${index}`, waitMs: 300 }),
        ),
      );
      const taken = claims.filter((claim): claim is DispatchClaim => claim !== undefined);
      expect(taken.map((claim) => claim.threadId)).toEqual([threadId]);
    });

    it('claims threads in the order they were first submitted', async () => {
      const dispatcher = await context.open();
      const threads = [uniqueId('thread'), uniqueId('thread'), uniqueId('thread')];
      for (const threadId of threads) await dispatcher.submit(makeSubmission(threadId));
      await dispatcher.submit(makeSubmission(threads[0]!));
      const order: string[] = [];
      for (let index = 0; index < threads.length; index++) {
        order.push((await dispatcher.claim({ workerId: 'w1' }))!.threadId);
      }
      expect(order).toEqual(threads);
      expect(await dispatcher.claim({ workerId: 'w1' })).toBeUndefined();
    });

    it('an aborted wait resolves undefined and takes nothing', async () => {
      const dispatcher = await context.open();
      const controller = new AbortController();
      const waiting = dispatcher.claim({ workerId: 'w1', waitMs: 30_000, signal: controller.signal });
      await sleep(50);
      controller.abort();
      expect(await waiting).toBeUndefined();
      const aborted = new AbortController();
      aborted.abort();
      expect(
        await dispatcher.claim({ workerId: 'w1', waitMs: 1_000, signal: aborted.signal }),
      ).toBeUndefined();
      const threadId = uniqueId('thread');
      await dispatcher.submit(makeSubmission(threadId));
      expect((await dispatcher.claim({ workerId: 'w2', waitMs: 2_000 }))?.threadId).toBe(threadId);
    });

    it('extend keeps a claim past its first lock', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      await dispatcher.submit(makeSubmission(threadId));
      const claim = (await dispatcher.claim({ workerId: 'w1', lockMs: 400 }))!;
      for (let round = 0; round < 5; round++) {
        await sleep(150);
        await dispatcher.extend(claim, 400);
      }
      expect(await sibling.claim({ workerId: 'w2', waitMs: 100 })).toBeUndefined();
      expect(await dispatcher.complete(claim)).toEqual({ rewoken: true });
    });

    it('extend without lockMs keeps the lock the claim was made with, on any instance: a short one lapses', {
      timeout: 30_000,
    }, async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      await dispatcher.submit(makeSubmission(threadId));
      const claim = (await dispatcher.claim({ workerId: 'w1', lockMs: 1_000 }))!;
      for (let round = 0; round < 6; round++) {
        await sleep(200);
        await (round % 2 === 0 ? dispatcher : sibling).extend(claim);
      }
      // Past its first lock: each extend gave it its 1,000 ms again.
      expect(await sibling.claim({ workerId: 'w2', waitMs: 100 })).toBeUndefined();
      // Not extended any more, it lapses 1,000 ms after the last extend, whatever the dispatcher's default lock.
      const taken = await sibling.claim({ workerId: 'w2', waitMs: 1_000 + context.redeliveryMs + 1_000 });
      expect(taken, 'the claim outlived the lock it was made with').toEqual(
        expect.objectContaining({ threadId, workerId: 'w2' }),
      );
      await expectLunationError(dispatcher.extend(claim), 'claim-lost');
      expect(await sibling.complete(taken!)).toEqual({ rewoken: true });
    });

    it('extend without lockMs keeps the lock the claim was made with, on any instance: a long one holds', {
      timeout: 30_000,
    }, async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      await dispatcher.submit(makeSubmission(threadId));
      const claim = (await dispatcher.claim({ workerId: 'w1', lockMs: 60_000 }))!;
      await dispatcher.extend(claim);
      await sibling.extend(claim);
      // Longer than a dispatcher's default lock would hold it (and its redelivery), far shorter than the claim's.
      expect(
        await sibling.claim({ workerId: 'w2', waitMs: context.redeliveryMs + 3_000 }),
        "the claim lapsed with the dispatcher's default lock",
      ).toBeUndefined();
      expect(await dispatcher.complete(claim)).toEqual({ rewoken: true });
    });

    it('a released claim is lost: extend, complete, fail and handBack reject with claim-lost', async () => {
      const dispatcher = await context.open();
      const threadId = uniqueId('thread');
      const submission = makeSubmission(threadId);
      await dispatcher.submit(submission);
      const claim = (await dispatcher.claim({ workerId: 'w1' }))!;
      await dispatcher.acknowledge(threadId, [submission.id]);
      await dispatcher.complete(claim);
      const error = await expectLunationError(dispatcher.extend(claim, 1_000), 'claim-lost');
      expect(error.details).toEqual(expect.objectContaining({ threadId, workerId: 'w1' }));
      await expectLunationError(dispatcher.complete(claim), 'claim-lost');
      await expectLunationError(dispatcher.fail(claim, new Error('x'), { retryable: true }), 'claim-lost');
      await expectLunationError(dispatcher.handBack(claim), 'claim-lost');
      const forged = { ...claim, token: `${claim.token}-forged` };
      await dispatcher.submit(makeSubmission(threadId));
      const next = (await dispatcher.claim({ workerId: 'w2' }))!;
      expect(next.token).not.toBe(claim.token);
      await expectLunationError(dispatcher.complete(forged), 'claim-lost');
      await expectLunationError(dispatcher.complete(claim), 'claim-lost');
      expect(await dispatcher.complete(next)).toEqual({ rewoken: true });
    });

    it('rejects bad claim options with invalid-argument', async () => {
      const dispatcher = await context.open();
      await expectLunationError(dispatcher.claim({ workerId: '' }), 'invalid-argument');
      await expectLunationError(dispatcher.claim({ workerId: 'w1', lockMs: 0 }), 'invalid-argument');
      await expectLunationError(dispatcher.claim({ workerId: 'w1', waitMs: -1 }), 'invalid-argument');
    });
  });
}
