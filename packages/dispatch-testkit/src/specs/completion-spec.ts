import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { makeSubmission, uniqueId } from '../fixtures.js';

/** Completion: the job ends with an empty inbox, and a thread that got submissions meanwhile is re-woken. */
export function completionSpec(context: DispatchSpecContext): void {
  describe('complete', () => {
    it('with an empty inbox ends the job: nothing to claim until the next submission', async () => {
      const dispatcher = await context.open();
      const threadId = uniqueId('thread');
      const submission = makeSubmission(threadId);
      await dispatcher.submit(submission);
      const claim = (await dispatcher.claim({ workerId: 'w1' }))!;
      await dispatcher.acknowledge(threadId, [submission.id]);
      expect(await dispatcher.complete(claim)).toEqual({ rewoken: false });
      expect(await dispatcher.claim({ workerId: 'w1', waitMs: 200 })).toBeUndefined();
      const next = makeSubmission(threadId);
      await dispatcher.submit(next);
      const again = await dispatcher.claim({ workerId: 'w2', waitMs: 2_000 });
      expect(again).toEqual(expect.objectContaining({ threadId, attempt: 1 }));
      expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual([next.id]);
    });

    it('re-wakes a thread that got a submission during the claim', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      const first = makeSubmission(threadId);
      await dispatcher.submit(first);
      const claim = (await dispatcher.claim({ workerId: 'w1' }))!;
      expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual([first.id]);
      const meanwhile = makeSubmission(threadId);
      await sibling.submit(meanwhile);
      await dispatcher.acknowledge(threadId, [first.id]);
      expect(await dispatcher.complete(claim)).toEqual({ rewoken: true });
      const again = await sibling.claim({ workerId: 'w2', waitMs: 2_000 });
      expect(again?.threadId).toBe(threadId);
      expect((await sibling.pending(threadId)).map((entry) => entry.id)).toEqual([meanwhile.id]);
    });

    it('re-wakes a thread whose submissions were not acknowledged', async () => {
      const dispatcher = await context.open();
      const threadId = uniqueId('thread');
      const submission = makeSubmission(threadId);
      await dispatcher.submit(submission);
      const claim = (await dispatcher.claim({ workerId: 'w1' }))!;
      expect(await dispatcher.complete(claim)).toEqual({ rewoken: true });
      const again = await dispatcher.claim({ workerId: 'w1', waitMs: 2_000 });
      expect(again?.threadId).toBe(threadId);
      expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual([submission.id]);
    });

    it('loses no wake-up when submissions race completions', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      const submitted: string[] = [];
      const processed: string[] = [];
      const first = makeSubmission(threadId, { text: 'round 0' });
      submitted.push(first.id);
      await dispatcher.submit(first);
      for (let round = 1; round <= 15; round++) {
        const claim = await dispatcher.claim({ workerId: 'w1', waitMs: 5_000 });
        expect(claim?.threadId, `round ${round}: the thread is claimable`).toBe(threadId);
        const entries = await dispatcher.pending(threadId);
        processed.push(...entries.map((entry) => entry.id));
        await dispatcher.acknowledge(
          threadId,
          entries.map((entry) => entry.id),
        );
        const next = makeSubmission(threadId, { text: `round ${round}` });
        submitted.push(next.id);
        // The submission and the completion race; either way the thread must come back.
        await Promise.all([sibling.submit(next), dispatcher.complete(claim!)]);
      }
      const last = await dispatcher.claim({ workerId: 'w1', waitMs: 5_000 });
      expect(last?.threadId).toBe(threadId);
      processed.push(...(await dispatcher.pending(threadId)).map((entry) => entry.id));
      expect(processed).toEqual(submitted);
    });
  });
}
