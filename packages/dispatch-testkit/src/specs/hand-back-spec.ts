import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { makeSubmission, uniqueId } from '../fixtures.js';

/** Hand-backs: the thread goes back (now or after a delay) without counting a failure. */
export function handBackSpec(context: DispatchSpecContext): void {
  describe('handBack', () => {
    it('without a delay makes the thread claimable at once, at the same attempt, inbox intact', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      const submission = makeSubmission(threadId);
      await dispatcher.submit(submission);
      const claim = (await dispatcher.claim({ workerId: 'w1' }))!;
      await dispatcher.handBack(claim);
      const again = await sibling.claim({ workerId: 'w2', waitMs: 2_000 });
      expect(again).toEqual(expect.objectContaining({ threadId, workerId: 'w2', attempt: 1 }));
      expect((await sibling.pending(threadId)).map((entry) => entry.id)).toEqual([submission.id]);
    });

    it('with a delay keeps the thread back until the delay ran out', async () => {
      const dispatcher = await context.open();
      const threadId = uniqueId('thread');
      await dispatcher.submit(makeSubmission(threadId));
      await dispatcher.handBack((await dispatcher.claim({ workerId: 'w1' }))!, { delayMs: 400 });
      expect(await dispatcher.claim({ workerId: 'w1', waitMs: 100 })).toBeUndefined();
      expect((await dispatcher.depth()).delayed).toBe(1);
      const again = await dispatcher.claim({ workerId: 'w1', waitMs: context.redeliveryMs + 400 });
      expect(again?.threadId).toBe(threadId);
    });

    it('never counts as a failure: many hand-backs neither raise the attempt nor dead-letter', async () => {
      const dispatcher = await context.open({ maxAttempts: 2 });
      const threadId = uniqueId('thread');
      await dispatcher.submit(makeSubmission(threadId));
      for (let round = 0; round < 6; round++) {
        const claim = await dispatcher.claim({ workerId: 'w1', waitMs: 2_000 });
        expect(claim?.attempt).toBe(1);
        await dispatcher.handBack(claim!);
      }
      const depth = await dispatcher.depth();
      expect([depth.deadLettered, depth.failed, depth.waiting]).toEqual([0, 0, 1]);
      expect(await dispatcher.deadLetters()).toEqual([]);
    });

    it('keeps submissions that arrived during the claim for the next claimer', async () => {
      const dispatcher = await context.open();
      const threadId = uniqueId('thread');
      const [first, second] = [makeSubmission(threadId), makeSubmission(threadId)];
      await dispatcher.submit(first);
      const claim = (await dispatcher.claim({ workerId: 'w1' }))!;
      await dispatcher.submit(second);
      await dispatcher.acknowledge(threadId, [first.id]);
      await dispatcher.handBack(claim);
      expect((await dispatcher.claim({ workerId: 'w2', waitMs: 2_000 }))?.threadId).toBe(threadId);
      expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual([second.id]);
    });
  });
}
