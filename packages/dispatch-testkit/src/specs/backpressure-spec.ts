import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { expectLunationError, makeSubmission, uniqueId } from '../fixtures.js';

/** Backpressure and fairness: the depth cap on submit, the per-tenant cap on claims. */
export function backpressureSpec(context: DispatchSpecContext): void {
  describe('backpressure and fairness', () => {
    it('submit rejects with a retryable overloaded error at maxDepth, keeping nothing, until a thread is claimed', async () => {
      const dispatcher = await context.open({ maxDepth: 2 });
      const sibling = await context.openSibling(dispatcher);
      const [t1, t2, t3] = [uniqueId('thread'), uniqueId('thread'), uniqueId('thread')];
      await dispatcher.submit(makeSubmission(t1));
      await dispatcher.submit(makeSubmission(t2));
      const rejected = makeSubmission(t3);
      const error = await expectLunationError(sibling.submit(rejected), 'overloaded');
      expect(error.isRetryable).toBe(true);
      expect(error.details).toEqual({ depth: 2, maxDepth: 2 });
      expect(await dispatcher.pending(t3)).toEqual([]);
      expect((await dispatcher.depth()).waiting).toBe(2);
      expect((await dispatcher.claim({ workerId: 'w1' }))?.threadId).toBe(t1);
      expect(await sibling.submit(rejected)).toEqual({ duplicate: false, deadLettered: false });
      expect((await dispatcher.pending(t3)).map((entry) => entry.id)).toEqual([rejected.id]);
    });

    it('claims skip a tenant at its cap and take other threads; the tenant gets its turn when a claim ends', async () => {
      const dispatcher = await context.open({ maxActivePerResource: 1 });
      const sibling = await context.openSibling(dispatcher);
      const [a1, a2, b1, free] = [uniqueId('a'), uniqueId('a'), uniqueId('b'), uniqueId('free')];
      await dispatcher.submit(makeSubmission(a1, { resourceId: 'tenant-a' }));
      await dispatcher.submit(makeSubmission(a2, { resourceId: 'tenant-a' }));
      await dispatcher.submit(makeSubmission(b1, { resourceId: 'tenant-b' }));
      await dispatcher.submit(makeSubmission(free));
      const first = (await dispatcher.claim({ workerId: 'w1', lockMs: 30_000 }))!;
      expect(first.threadId).toBe(a1);
      const others = [
        (await sibling.claim({ workerId: 'w2', lockMs: 30_000, waitMs: 2_000 }))?.threadId,
        (await sibling.claim({ workerId: 'w2', lockMs: 30_000, waitMs: 2_000 }))?.threadId,
      ];
      expect(others.sort()).toEqual([b1, free].sort());
      expect(await sibling.claim({ workerId: 'w3', waitMs: 300 })).toBeUndefined();
      expect((await dispatcher.depth()).byResource['tenant-a']?.active).toBe(1);
      await dispatcher.handBack(first, { delayMs: 60_000 });
      const second = await sibling.claim({
        workerId: 'w3',
        lockMs: 30_000,
        waitMs: context.redeliveryMs + 1_000,
      });
      expect(second?.threadId).toBe(a2);
    });
  });
}
