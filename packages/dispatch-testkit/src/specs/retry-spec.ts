import { deadLetterSchema, LunationError } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { makeSubmission, sleep, uniqueId } from '../fixtures.js';

const policy = { maxAttempts: 3, backoff: { initialMs: 100, factor: 3, maxMs: 5_000 } };

/** Failures: retries after an exponential backoff, dead letters after the last attempt, resubmission. */
export function retrySpec(context: DispatchSpecContext): void {
  describe('fail, retries and dead letters', () => {
    it('a retryable failure comes back after its backoff, with the next attempt number and the inbox intact', async () => {
      const dispatcher = await context.open({
        maxAttempts: 3,
        backoff: { initialMs: 500, factor: 3, maxMs: 5_000 },
      });
      const threadId = uniqueId('thread');
      const submission = makeSubmission(threadId);
      await dispatcher.submit(submission);
      const first = (await dispatcher.claim({ workerId: 'w1' }))!;
      const before = Date.now();
      const outcome = await dispatcher.fail(first, new Error('model timed out'), { retryable: true });
      const after = Date.now();
      expect(outcome).toEqual({ deadLettered: false, retryAt: expect.any(Number) });
      expect(outcome.retryAt).toBeGreaterThanOrEqual(before + 500);
      expect(outcome.retryAt).toBeLessThanOrEqual(after + 500);
      expect(await dispatcher.claim({ workerId: 'w1' })).toBeUndefined();
      const second = await dispatcher.claim({ workerId: 'w1', waitMs: context.redeliveryMs + 500 });
      expect(second).toEqual(expect.objectContaining({ threadId, attempt: 2 }));
      expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual([submission.id]);
      const before3 = Date.now();
      const again = await dispatcher.fail(second!, new Error('again'), { retryable: true });
      const after3 = Date.now();
      expect(again.retryAt).toBeGreaterThanOrEqual(before3 + 1_500);
      expect(again.retryAt).toBeLessThanOrEqual(after3 + 1_500);
    });

    it('dead-letters after maxAttempts, with the last error, the attempts and the pending count', async () => {
      const dispatcher = await context.open(policy);
      const threadId = uniqueId('thread');
      await dispatcher.submit(makeSubmission(threadId, { resourceId: 'tenant-a' }));
      const outcomes: boolean[] = [];
      for (let attempt = 1; attempt <= 3; attempt++) {
        const claim = await dispatcher.claim({ workerId: 'w1', waitMs: context.redeliveryMs + 1_000 });
        expect(claim?.attempt).toBe(attempt);
        const error = new LunationError('provider-error', `attempt ${attempt} failed`, {
          details: { attempt },
        });
        outcomes.push((await dispatcher.fail(claim!, error)).deadLettered);
      }
      expect(outcomes).toEqual([false, false, true]);
      const letters = await dispatcher.deadLetters();
      expect(letters).toEqual([
        {
          threadId,
          resourceId: 'tenant-a',
          attempts: 3,
          error: {
            code: 'provider-error',
            message: 'attempt 3 failed',
            retryable: true,
            details: { attempt: 3 },
          },
          deadLetteredAt: expect.any(Number),
          pending: 1,
        },
      ]);
      expect(deadLetterSchema.safeParse(letters[0]).success).toBe(true);
      expect(await dispatcher.claim({ workerId: 'w1', waitMs: 300 })).toBeUndefined();
      expect((await dispatcher.depth()).deadLettered).toBe(1);
    });

    it('a non-retryable failure dead-letters at once; retryable defaults to the error', async () => {
      const dispatcher = await context.open(policy);
      const [first, second] = [uniqueId('thread'), uniqueId('thread')];
      await dispatcher.submit(makeSubmission(first));
      await dispatcher.submit(makeSubmission(second));
      const claimFirst = (await dispatcher.claim({ workerId: 'w1' }))!;
      const claimSecond = (await dispatcher.claim({ workerId: 'w1' }))!;
      expect(await dispatcher.fail(claimFirst, new LunationError('tool-execution-failed', 'boom'))).toEqual({
        deadLettered: true,
      });
      expect(
        (await dispatcher.fail(claimSecond, new LunationError('rate-limited', 'slow down'))).deadLettered,
      ).toBe(false);
      const letters = await dispatcher.deadLetters();
      expect(letters.map((letter) => [letter.threadId, letter.attempts, letter.error.code])).toEqual([
        [first, 1, 'tool-execution-failed'],
      ]);
      const plain = (await dispatcher.claim({ workerId: 'w1', waitMs: context.redeliveryMs + 500 }))!;
      expect(plain.threadId).toBe(second);
      expect(await dispatcher.fail(plain, new TypeError('not a LunationError'))).toEqual({
        deadLettered: true,
      });
      const errors = (await dispatcher.deadLetters()).map((letter) => letter.error);
      expect(errors[1]).toEqual({ code: 'internal', message: 'not a LunationError', retryable: false });
    });

    it('a dead-lettered thread keeps new submissions until resubmit, which restarts its attempts', async () => {
      const dispatcher = await context.open(policy);
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      const first = makeSubmission(threadId);
      await dispatcher.submit(first);
      await dispatcher.fail((await dispatcher.claim({ workerId: 'w1' }))!, new Error('fatal'), {
        retryable: false,
      });
      const later = makeSubmission(threadId);
      expect(await dispatcher.submit(later)).toEqual({ duplicate: false, deadLettered: true });
      expect(await sibling.submit(later)).toEqual({ duplicate: true, deadLettered: true });
      expect(await dispatcher.claim({ workerId: 'w1', waitMs: 300 })).toBeUndefined();
      expect((await dispatcher.deadLetters())[0]?.pending).toBe(2);
      expect(await sibling.resubmit(threadId)).toBe(true);
      expect(await sibling.resubmit(threadId)).toBe(false);
      expect(await dispatcher.resubmit(uniqueId('thread'))).toBe(false);
      expect(await dispatcher.deadLetters()).toEqual([]);
      const claim = await dispatcher.claim({ workerId: 'w2', waitMs: 2_000 });
      expect(claim).toEqual(expect.objectContaining({ threadId, attempt: 1 }));
      expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual([first.id, later.id]);
      expect((await dispatcher.depth()).deadLettered).toBe(0);
      expect(await sibling.submit(makeSubmission(threadId))).toEqual({
        duplicate: false,
        deadLettered: false,
      });
    });

    it('a completed thread starts its next job at attempt 1', async () => {
      const dispatcher = await context.open(policy);
      const threadId = uniqueId('thread');
      const submission = makeSubmission(threadId);
      await dispatcher.submit(submission);
      await dispatcher.fail((await dispatcher.claim({ workerId: 'w1' }))!, new Error('flaky'), {
        retryable: true,
      });
      const retried = (await dispatcher.claim({ workerId: 'w1', waitMs: context.redeliveryMs + 500 }))!;
      expect(retried.attempt).toBe(2);
      await dispatcher.acknowledge(threadId, [submission.id]);
      await dispatcher.complete(retried);
      await dispatcher.submit(makeSubmission(threadId));
      expect((await dispatcher.claim({ workerId: 'w1', waitMs: 2_000 }))?.attempt).toBe(1);
    });

    it('lists dead letters oldest first, at most `limit`', async () => {
      const dispatcher = await context.open(policy);
      const threads = [uniqueId('thread'), uniqueId('thread'), uniqueId('thread')];
      for (const threadId of threads) await dispatcher.submit(makeSubmission(threadId));
      for (let index = 0; index < threads.length; index++) {
        await dispatcher.fail((await dispatcher.claim({ workerId: 'w1' }))!, new Error(`e${index}`));
        await sleep(5);
      }
      expect((await dispatcher.deadLetters()).map((letter) => letter.threadId)).toEqual(threads);
      expect((await dispatcher.deadLetters({ limit: 2 })).map((letter) => letter.threadId)).toEqual(
        threads.slice(0, 2),
      );
    });
  });
}
