import { describe, expect, it } from 'vitest';
import {
  expectLunationError,
  makeRunRecord,
  makeToolExecution,
  makeToolResult,
  makeUserMessage,
} from '../fixtures.js';
import type { StoreSpecContext } from '../store-spec-context.js';

/** Bad input is `invalid-argument` and writes nothing. */
export function inputSpec(context: StoreSpecContext): void {
  describe('input checks', () => {
    async function expectUntouched(threadId: string): Promise<void> {
      const { store } = context;
      expect(await store.loadCheckpoint(threadId)).toEqual({
        thread: await store.getThread(threadId),
        messages: [],
        threadState: {},
        latestRun: undefined,
      });
      expect((await store.getThread(threadId))?.messageCount).toBe(0);
    }

    it('rejects bad ids, limits, cursors and tokens with invalid-argument', async () => {
      const { store } = context;
      await store.createThread({ id: 't1' });
      await expectLunationError(store.createThread({ id: '' }), 'invalid-argument');
      await expectLunationError(store.listThreads({ limit: 0 }), 'invalid-argument');
      await expectLunationError(store.listThreads({ cursor: 'bm90LWEtY3Vyc29y' }), 'invalid-argument');
      await expectLunationError(store.listRuns('t1', { cursor: '!!' }), 'invalid-argument');
      await expectLunationError(
        store.renewLease({ threadId: 't1', token: 0, ttlMs: 10 }),
        'invalid-argument',
      );
      await expectLunationError(
        store.commit({ threadId: 't1', expectedMessageCount: -1, messages: [] }),
        'invalid-argument',
      );
      expect((await store.listThreads()).items).toHaveLength(1);
    });

    it('rejects a run of another thread, and a run id taken by another thread, writing nothing', async () => {
      const { store } = context;
      await store.createThread({ id: 'left' });
      await store.createThread({ id: 'right' });
      await store.commit({
        threadId: 'left',
        expectedMessageCount: 0,
        messages: [],
        run: makeRunRecord({ threadId: 'left', runId: 'r1' }),
      });
      await expectLunationError(
        store.commit({
          threadId: 'right',
          expectedMessageCount: 0,
          messages: [makeUserMessage()],
          run: makeRunRecord({ threadId: 'left', runId: 'r2' }),
        }),
        'invalid-argument',
      );
      await expectLunationError(
        store.commit({
          threadId: 'right',
          expectedMessageCount: 0,
          messages: [makeUserMessage()],
          run: makeRunRecord({ threadId: 'right', runId: 'r1' }),
          threadState: { written: true },
        }),
        'invalid-argument',
      );
      await expectUntouched('right');
    });

    it('rejects a ledger entry of another thread in a commit or a begin, writing nothing', async () => {
      const { store } = context;
      await store.createThread({ id: 'left' });
      await store.createThread({ id: 'right' });
      const entry = makeToolExecution({ threadId: 'left', runId: 'r1', toolCallId: 'call-1' });
      const completed = { ...entry, status: 'completed' as const, result: makeToolResult(1), completedAt: 1 };
      await store.commit({
        threadId: 'left',
        expectedMessageCount: 0,
        messages: [],
        toolExecutions: [completed],
      });
      await expectLunationError(
        store.commit({
          threadId: 'right',
          expectedMessageCount: 0,
          messages: [makeUserMessage()],
          threadState: { written: true },
          toolExecutions: [{ ...entry, threadId: 'right' }],
        }),
        'invalid-argument',
      );
      await expectLunationError(
        store.beginToolExecution({
          runId: 'r1',
          toolCallId: 'call-1',
          threadId: 'right',
          toolName: entry.toolName,
          idempotencyKey: entry.idempotencyKey,
        }),
        'invalid-argument',
      );
      await expectUntouched('right');
      expect(await store.getToolExecution('r1', 'call-1')).toEqual(completed);
    });

    it('rejects a cursor of another listing and a commit that cannot be stored as JSON', async () => {
      const { store } = context;
      await store.createThread({ id: 't1' });
      await store.createThread({ id: 't2' });
      const page = await store.listThreads({ limit: 1 });
      expect(page.nextCursor).toEqual(expect.any(String));
      await expectLunationError(store.listRuns('t1', { cursor: page.nextCursor }), 'invalid-argument');
      await expectLunationError(
        store.commit({
          threadId: 't1',
          expectedMessageCount: 0,
          messages: [makeUserMessage()],
          run: makeRunRecord({ threadId: 't1', runId: 'r1' }),
          threadState: { count: BigInt(1) } as unknown as Record<string, never>,
        }),
        'invalid-argument',
      );
      await expectUntouched('t1');
    });
  });
}
