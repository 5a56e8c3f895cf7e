import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { collect, makeSubmission, uniqueId } from '../fixtures.js';

/** Closing an instance: waits end, held claims go back at once, subscriptions end; siblings go on. */
export function closeSpec(context: DispatchSpecContext): void {
  describe('close', () => {
    it('resolves waiting claims, hands back held claims at once and ends subscriptions; siblings go on', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const closing = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      const submission = makeSubmission(threadId);
      await dispatcher.submit(submission);
      const held = await closing.claim({ workerId: 'leaving', lockMs: 60_000 });
      expect(held?.threadId).toBe(threadId);
      const waiting = closing.claim({ workerId: 'leaving', waitMs: 30_000 });
      const runId = uniqueId('run');
      const subscription = collect(closing.subscribeEvents(runId, { signal: new AbortController().signal }), {
        timeoutMs: 10_000,
      });
      await closing.close();
      expect(await waiting).toBeUndefined();
      expect(await subscription).toEqual([]);
      const taken = await sibling.claim({ workerId: 'staying', waitMs: context.redeliveryMs });
      expect(taken).toEqual(expect.objectContaining({ threadId, attempt: 1 }));
      expect((await sibling.pending(threadId)).map((entry) => entry.id)).toEqual([submission.id]);
      expect((await sibling.depth()).failed).toBe(0);
    });
  });
}
