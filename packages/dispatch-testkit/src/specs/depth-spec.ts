import { dispatchDepthSchema } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { makeSubmission, uniqueId } from '../fixtures.js';

/** Figures: threads by state, pending submissions, completed and failed totals, per tenant. */
export function depthSpec(context: DispatchSpecContext): void {
  describe('depth', () => {
    it('is all zeros for an empty backend', async () => {
      const dispatcher = await context.open();
      expect(await dispatcher.depth()).toEqual({
        waiting: 0,
        active: 0,
        delayed: 0,
        deadLettered: 0,
        pending: 0,
        completed: 0,
        failed: 0,
        byResource: {},
      });
    });

    it('counts threads by state, pending submissions and totals, overall and per tenant', async () => {
      const dispatcher = await context.open({ backoff: { initialMs: 60_000 } });
      const sibling = await context.openSibling(dispatcher);
      const [t1, t2, t3, t4] = [
        uniqueId('thread'),
        uniqueId('thread'),
        uniqueId('thread'),
        uniqueId('thread'),
      ];
      const s1 = makeSubmission(t1, { resourceId: 'tenant-a' });
      const s1b = makeSubmission(t1, { resourceId: 'tenant-a' });
      await dispatcher.submit(s1);
      await dispatcher.submit(s1b);
      await dispatcher.submit(makeSubmission(t2, { resourceId: 'tenant-a' }));
      await dispatcher.submit(makeSubmission(t3, { resourceId: 'tenant-b' }));
      await dispatcher.submit(makeSubmission(t4));
      const start = await sibling.depth();
      expect(dispatchDepthSchema.safeParse(start).success).toBe(true);
      expect(start).toEqual({
        waiting: 4,
        active: 0,
        delayed: 0,
        deadLettered: 0,
        pending: 5,
        completed: 0,
        failed: 0,
        byResource: {
          'tenant-a': { pending: 3, active: 0, deadLettered: 0 },
          'tenant-b': { pending: 1, active: 0, deadLettered: 0 },
        },
      });

      const c1 = (await dispatcher.claim({ workerId: 'w1', lockMs: 30_000 }))!;
      const c2 = (await dispatcher.claim({ workerId: 'w1', lockMs: 30_000 }))!;
      const c3 = (await sibling.claim({ workerId: 'w2', lockMs: 30_000 }))!;
      expect([c1.threadId, c2.threadId, c3.threadId]).toEqual([t1, t2, t3]);
      expect(await dispatcher.depth()).toEqual(
        expect.objectContaining({
          waiting: 1,
          active: 3,
          pending: 5,
          byResource: {
            'tenant-a': { pending: 3, active: 2, deadLettered: 0 },
            'tenant-b': { pending: 1, active: 1, deadLettered: 0 },
          },
        }),
      );

      await dispatcher.acknowledge(t1, [s1.id, s1b.id]);
      await dispatcher.complete(c1);
      await dispatcher.fail(c2, new Error('flaky'), { retryable: true });
      await sibling.fail(c3, new Error('fatal'), { retryable: false });
      expect(await sibling.depth()).toEqual({
        waiting: 1,
        active: 0,
        delayed: 1,
        deadLettered: 1,
        pending: 3,
        completed: 1,
        failed: 2,
        byResource: {
          'tenant-a': { pending: 1, active: 0, deadLettered: 0 },
          'tenant-b': { pending: 1, active: 0, deadLettered: 1 },
        },
      });
    });
  });
}
