import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { makeSubmission, sleep, uniqueId } from '../fixtures.js';

/** How many times the spec lets a thread's claim lapse: more than any lost-claim limit a backend used to have. */
const lapses = 15;

/** Losing a claim is never a failure: only `fail` counts toward dead-lettering. */
export function lostClaimSpec(context: DispatchSpecContext): void {
  describe('lost claims', () => {
    it(`a thread whose claim lapses ${lapses} times is still claimable, at attempt 1, never dead-lettered`, {
      timeout: 120_000,
    }, async () => {
      const dispatcher = await context.open({ maxAttempts: 2 });
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      const submissions = [makeSubmission(threadId), makeSubmission(threadId)];
      for (const submission of submissions) await dispatcher.submit(submission);
      for (let round = 0; round < lapses; round++) {
        const instance = round % 2 === 0 ? dispatcher : sibling;
        const claim = await instance.claim({
          workerId: `stalls-${round}`,
          lockMs: 100,
          waitMs: context.redeliveryMs + 1_000,
        });
        expect(claim, `claim ${round + 1} of ${lapses}`).toEqual(
          expect.objectContaining({ threadId, attempt: 1 }),
        );
        await sleep(250);
      }
      const last = await dispatcher.claim({ workerId: 'healthy', waitMs: context.redeliveryMs + 1_000 });
      expect(last).toEqual(expect.objectContaining({ threadId, attempt: 1 }));
      expect(await dispatcher.deadLetters()).toEqual([]);
      expect((await sibling.depth()).deadLettered).toBe(0);
      expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual(
        submissions.map((submission) => submission.id),
      );
      expect(await dispatcher.submit(makeSubmission(threadId))).toEqual({
        duplicate: false,
        deadLettered: false,
      });
      expect(await dispatcher.complete(last!)).toEqual({ rewoken: true });
    });
  });
}
