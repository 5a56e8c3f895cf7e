import { inboxEntrySchema, type Submission } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import {
  expectLunationError,
  makeDecisionsSubmission,
  makeSubmission,
  sleep,
  uniqueId,
} from '../fixtures.js';

/** Submissions: durable in the thread's inbox, in order, deduplicated by id, checked. */
export function submitSpec(context: DispatchSpecContext): void {
  describe('submit', () => {
    it("keeps a thread's submissions in submission order, each with submittedAt", async () => {
      const dispatcher = await context.open();
      const threadId = uniqueId('thread');
      const submissions = [1, 2, 3].map((n) =>
        makeSubmission(threadId, { resourceId: 'tenant-a', text: `m${n}` }),
      );
      const before = Date.now();
      for (const submission of submissions)
        expect(await dispatcher.submit(submission)).toEqual({ duplicate: false, deadLettered: false });
      const after = Date.now();
      const entries = await dispatcher.pending(threadId);
      expect(entries.map((entry) => entry.id)).toEqual(submissions.map((submission) => submission.id));
      for (const [index, entry] of entries.entries()) {
        expect(inboxEntrySchema.safeParse(entry).success).toBe(true);
        expect(entry).toEqual({ ...submissions[index], submittedAt: expect.any(Number) });
        expect(entry.submittedAt).toBeGreaterThanOrEqual(before - 1_000);
        expect(entry.submittedAt).toBeLessThanOrEqual(after + 1_000);
      }
    });

    it('treats a repeated id as a no-op: the first submission stays, nothing is added', async () => {
      const dispatcher = await context.open();
      const threadId = uniqueId('thread');
      const first = makeSubmission(threadId, { text: 'first' });
      await dispatcher.submit(first);
      const again = { ...makeSubmission(threadId, { text: 'second' }), id: first.id };
      expect(await dispatcher.submit(again)).toEqual({ duplicate: true, deadLettered: false });
      expect(await dispatcher.pending(threadId)).toEqual([{ ...first, submittedAt: expect.any(Number) }]);
      expect((await dispatcher.depth()).pending).toBe(1);
    });

    it('still recognises an acknowledged id as a duplicate, and it wakes nothing', async () => {
      const dispatcher = await context.open();
      const threadId = uniqueId('thread');
      const submission = makeSubmission(threadId);
      await dispatcher.submit(submission);
      const claim = await dispatcher.claim({ workerId: 'w1' });
      expect(claim?.threadId).toBe(threadId);
      expect(await dispatcher.acknowledge(threadId, [submission.id])).toBe(1);
      expect(await dispatcher.complete(claim!)).toEqual({ rewoken: false });
      expect(await dispatcher.submit(submission)).toEqual({ duplicate: true, deadLettered: false });
      expect(await dispatcher.pending(threadId)).toEqual([]);
      expect(await dispatcher.claim({ workerId: 'w1', waitMs: 200 })).toBeUndefined();
    });

    it('the dedupe window: a pending id is always a duplicate; an acknowledged one for dedupeWindowMs from its acknowledgement, then it is new work', async () => {
      const windowMs = 1_500;
      const dispatcher = await context.open({ dedupeWindowMs: windowMs });
      const threadId = uniqueId('thread');
      const submission = makeSubmission(threadId);
      await dispatcher.submit(submission);
      // Pending for longer than the window: still a duplicate (the window does not start at submission).
      await sleep(windowMs + 500);
      expect(await dispatcher.submit(submission)).toEqual({ duplicate: true, deadLettered: false });
      const claim = await dispatcher.claim({ workerId: 'w1' });
      expect(claim?.threadId).toBe(threadId);
      expect(await dispatcher.acknowledge(threadId, [submission.id])).toBe(1);
      expect(await dispatcher.complete(claim!)).toEqual({ rewoken: false });
      const acknowledgedAt = Date.now();
      // Within the window from the acknowledgement, though past it from the submission: a duplicate.
      await sleep(500);
      expect(await dispatcher.submit(submission)).toEqual({ duplicate: true, deadLettered: false });
      expect(await dispatcher.pending(threadId)).toEqual([]);
      // Past the window from the acknowledgement: forgotten, so the same id is new work again.
      await sleep(Math.max(0, acknowledgedAt + windowMs + 1_000 - Date.now()));
      expect(await dispatcher.submit(submission)).toEqual({ duplicate: false, deadLettered: false });
      expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual([submission.id]);
    });

    it('scopes ids to their thread and keeps threads apart', async () => {
      const dispatcher = await context.open();
      const [first, second] = [uniqueId('thread'), uniqueId('thread')];
      const a = makeSubmission(first, { id: 'same-id', text: 'to first' });
      const b = makeSubmission(second, { id: 'same-id', text: 'to second' });
      const c = makeSubmission(first, { text: 'first again' });
      expect(await dispatcher.submit(a)).toEqual({ duplicate: false, deadLettered: false });
      expect(await dispatcher.submit(b)).toEqual({ duplicate: false, deadLettered: false });
      await dispatcher.submit(c);
      expect((await dispatcher.pending(first)).map((entry) => entry.request)).toEqual([a.request, c.request]);
      expect((await dispatcher.pending(second)).map((entry) => entry.request)).toEqual([b.request]);
      expect(await dispatcher.pending(uniqueId('thread'))).toEqual([]);
    });

    it('keeps decisions and every input field as submitted', async () => {
      const dispatcher = await context.open();
      const threadId = uniqueId('thread');
      const input: Submission = {
        id: uniqueId('submission'),
        threadId,
        resourceId: 'tenant-a',
        request: {
          type: 'input',
          input: [
            { id: 'm1', role: 'user', content: [{ type: 'text', text: 'Plan a trip 🚀 — «ünïcode»' }] },
          ],
          agentId: 'planner',
          runId: 'run-chosen-by-client',
          frontendTools: [
            {
              name: 'pick_date',
              description: 'Asks the user for a date',
              parameters: { type: 'object', properties: {} },
              responseSchema: { type: 'string' },
            },
          ],
        },
      };
      const decisions = makeDecisionsSubmission(threadId);
      await dispatcher.submit(input);
      await dispatcher.submit(decisions);
      const entries = await dispatcher.pending(threadId);
      expect(entries.map(({ submittedAt: _, ...entry }) => entry)).toEqual([input, decisions]);
    });

    it('rejects malformed submissions with invalid-argument and keeps nothing', async () => {
      const dispatcher = await context.open();
      const threadId = uniqueId('thread');
      const valid = makeSubmission(threadId);
      const bad: unknown[] = [
        { ...valid, id: '' },
        { ...valid, threadId: '' },
        { ...valid, resourceId: '' },
        { ...valid, request: { type: 'shout', input: [] } },
        { ...valid, request: { type: 'input', input: [] } },
        { ...valid, request: { type: 'decisions', decisions: [] } },
        { ...valid, request: undefined },
      ];
      for (const submission of bad) {
        await expectLunationError(dispatcher.submit(submission as Submission), 'invalid-argument');
      }
      expect(await dispatcher.pending(threadId)).toEqual([]);
      expect((await dispatcher.depth()).pending).toBe(0);
    });
  });
}
