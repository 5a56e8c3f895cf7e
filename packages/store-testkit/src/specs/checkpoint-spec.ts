import { checkpointMessages, threadRecordSchema } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { makeAssistantMessage, makeRunRecord, makeUserMessage, uniqueId } from '../fixtures.js';
import type { StoreSpecContext } from '../store-spec-context.js';
import { appendMessages, createThread, expectSchema } from './spec-helpers.js';

/** loadCheckpoint: the thread, all its messages, its state and its latest run in one read. */
export function checkpointSpec(context: StoreSpecContext): void {
  describe('loadCheckpoint', () => {
    it('returns undefined for an unknown thread', async () => {
      expect(await context.store.loadCheckpoint(uniqueId('missing'))).toBeUndefined();
    });

    it('returns an empty checkpoint for a new thread', async () => {
      const thread = await context.store.createThread({ id: uniqueId('thread'), metadata: { a: 1 } });
      const checkpoint = await context.store.loadCheckpoint(thread.id);
      expect(checkpoint).toEqual({ thread, messages: [], threadState: {}, latestRun: undefined });
      expect(checkpoint?.latestRun).toBeUndefined();
    });

    it('returns the thread, every message in seq order, the state and the latest run', async () => {
      const thread = await createThread(context.store, { resourceId: 'user-9' });
      const base = Date.now();
      const firstRun = makeRunRecord({ threadId: thread.id }, { createdAt: base, updatedAt: base });
      const secondRun = makeRunRecord({ threadId: thread.id }, { createdAt: base + 5, updatedAt: base + 5 });
      const first = await appendMessages(
        context.store,
        thread.id,
        [makeUserMessage('q1'), makeAssistantMessage('a1')],
        {
          run: firstRun,
          threadState: { turn: 1 },
        },
      );
      const second = await appendMessages(
        context.store,
        thread.id,
        [makeUserMessage('q2'), makeAssistantMessage('a2')],
        {
          run: secondRun,
          threadState: { turn: 2 },
        },
      );
      const finishedFirst = { ...firstRun, status: 'done' as const, updatedAt: base + 50 };
      await appendMessages(context.store, thread.id, [], { run: finishedFirst });

      const checkpoint = await context.store.loadCheckpoint(thread.id);
      expect(checkpoint).toBeDefined();
      expectSchema(threadRecordSchema, checkpoint?.thread);
      expect(checkpoint?.thread).toEqual(await context.store.getThread(thread.id));
      expect(checkpoint?.thread.messageCount).toBe(4);
      expect(checkpoint?.messages).toEqual(await context.store.listMessages(thread.id));
      expect(checkpoint?.messages.map((record) => record.seq)).toEqual([1, 2, 3, 4]);
      expect(checkpointMessages(checkpoint!)).toEqual([...first, ...second]);
      expect(checkpoint?.messages.map((record) => record.runId)).toEqual([
        firstRun.identity.runId,
        firstRun.identity.runId,
        secondRun.identity.runId,
        secondRun.identity.runId,
      ]);
      expect(checkpoint?.threadState).toEqual({ turn: 2 });
      expect(checkpoint?.latestRun).toEqual(secondRun);
    });

    it('reflects each commit: the thread count always matches the messages returned', async () => {
      const thread = await createThread(context.store);
      for (let step = 1; step <= 4; step += 1) {
        await appendMessages(context.store, thread.id, step, { threadState: { step } });
        const checkpoint = await context.store.loadCheckpoint(thread.id);
        expect(checkpoint?.messages).toHaveLength(checkpoint?.thread.messageCount ?? -1);
        expect(checkpoint?.thread.messageCount).toBe((step * (step + 1)) / 2);
        expect(checkpoint?.threadState).toEqual({ step });
      }
    });
  });
}
