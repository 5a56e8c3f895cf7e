import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { expectLunationError, makeSubmission, sleep, uniqueId } from '../fixtures.js';

/** The inbox: acknowledgement by id, and redelivery of what was not acknowledged when a claim is lost. */
export function inboxSpec(context: DispatchSpecContext): void {
  describe('inbox', () => {
    it('acknowledge removes exactly the given submissions and resolves how many it removed', async () => {
      const dispatcher = await context.open();
      const threadId = uniqueId('thread');
      const [a, b, c] = [makeSubmission(threadId), makeSubmission(threadId), makeSubmission(threadId)];
      for (const submission of [a, b, c]) await dispatcher.submit(submission!);
      expect(await dispatcher.acknowledge(threadId, [b!.id, 'no-such-submission'])).toBe(1);
      expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual([a!.id, c!.id]);
      expect(await dispatcher.acknowledge(threadId, [b!.id])).toBe(0);
      expect(await dispatcher.acknowledge(uniqueId('thread'), [a!.id])).toBe(0);
      expect(await dispatcher.acknowledge(threadId, [a!.id, c!.id])).toBe(2);
      expect(await dispatcher.pending(threadId)).toEqual([]);
      expect((await dispatcher.depth()).pending).toBe(0);
      await expectLunationError(dispatcher.acknowledge(threadId, ['']), 'invalid-argument');
    });

    it('a claim whose lock expires is lost; the next claimer gets every unacknowledged submission, in order', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      const submissions = [1, 2, 3].map((n) => makeSubmission(threadId, { text: `m${n}` }));
      for (const submission of submissions) await dispatcher.submit(submission);
      const first = (await dispatcher.claim({ workerId: 'dies', lockMs: 200 }))!;
      expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual(
        submissions.map((submission) => submission.id),
      );
      await dispatcher.acknowledge(threadId, [submissions[0]!.id]);
      const late = makeSubmission(threadId, { text: 'arrived during the lost claim' });
      await sibling.submit(late);
      await sleep(300);
      const second = await sibling.claim({
        workerId: 'takes-over',
        lockMs: 30_000,
        waitMs: context.redeliveryMs,
      });
      expect(second).toEqual(expect.objectContaining({ threadId, workerId: 'takes-over', attempt: 1 }));
      expect(second!.token).not.toBe(first.token);
      expect((await sibling.pending(threadId)).map((entry) => entry.id)).toEqual([
        submissions[1]!.id,
        submissions[2]!.id,
        late.id,
      ]);
      await expectLunationError(dispatcher.extend(first, 1_000), 'claim-lost');
      await expectLunationError(dispatcher.complete(first), 'claim-lost');
      expect(await dispatcher.claim({ workerId: 'third', waitMs: 100 })).toBeUndefined();
    });

    it('a lock that expired is lost even before anyone else claims the thread', async () => {
      const dispatcher = await context.open();
      const threadId = uniqueId('thread');
      await dispatcher.submit(makeSubmission(threadId));
      const claim = (await dispatcher.claim({ workerId: 'slow', lockMs: 150 }))!;
      await sleep(400);
      await expectLunationError(dispatcher.extend(claim, 30_000), 'claim-lost');
      const again = await dispatcher.claim({ workerId: 'next', waitMs: context.redeliveryMs });
      expect(again?.threadId).toBe(threadId);
      await expectLunationError(dispatcher.handBack(claim), 'claim-lost');
      expect((await dispatcher.pending(threadId)).length).toBe(1);
    });
  });
}
