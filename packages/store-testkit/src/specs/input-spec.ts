import { LunationError, type LunationStore } from '@lunation/contract';
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

    it('rejects a bad argument of every method with invalid-argument, writing nothing', async () => {
      const { store } = context;
      await store.createThread({ id: 't1' });
      const ok = { threadId: 't1', owner: 'o', runId: 'r1', ttlMs: 10_000 };
      const begin = { runId: 'r1', toolCallId: 'c1', threadId: 't1', toolName: 'tool', idempotencyKey: 'k' };
      const result = makeToolResult();
      const calls: Record<string, (store: LunationStore) => Promise<unknown>> = {
        'createThread, empty resourceId': (s) => s.createThread({ id: 't2', resourceId: '' }),
        'createThread, metadata not an object': (s) => s.createThread({ id: 't2', metadata: [] as never }),
        'getThread, empty id': (s) => s.getThread(''),
        'listThreads, empty resourceId': (s) => s.listThreads({ resourceId: '' }),
        'updateThreadMetadata, empty id': (s) => s.updateThreadMetadata('', {}),
        'updateThreadMetadata, metadata not an object': (s) => s.updateThreadMetadata('t1', null as never),
        'deleteThread, empty id': (s) => s.deleteThread(''),
        'listMessages, empty id': (s) => s.listMessages(''),
        'listMessages, fromSeq 0': (s) => s.listMessages('t1', { fromSeq: 0 }),
        'listMessages, toSeq -1': (s) => s.listMessages('t1', { toSeq: -1 }),
        'listMessages, limit 0': (s) => s.listMessages('t1', { limit: 0 }),
        'getRun, empty id': (s) => s.getRun(''),
        'getLatestRun, empty id': (s) => s.getLatestRun(''),
        'listRuns, empty id': (s) => s.listRuns(''),
        'listRuns, limit 1.5': (s) => s.listRuns('t1', { limit: 1.5 }),
        'getThreadState, empty id': (s) => s.getThreadState(''),
        'loadCheckpoint, empty id': (s) => s.loadCheckpoint(''),
        'beginToolExecution, empty toolName': (s) => s.beginToolExecution({ ...begin, toolName: '' }),
        'beginToolExecution, leaseToken 0': (s) => s.beginToolExecution({ ...begin, leaseToken: 0 }),
        'completeToolExecution, empty runId': (s) =>
          s.completeToolExecution({ runId: '', toolCallId: 'c1', result }),
        'completeToolExecution, empty toolCallId': (s) =>
          s.completeToolExecution({ runId: 'r1', toolCallId: '', result }),
        'completeToolExecution, result not an object': (s) =>
          s.completeToolExecution({ runId: 'r1', toolCallId: 'c1', result: null as never }),
        'completeToolExecution, leaseToken 0': (s) =>
          s.completeToolExecution({ runId: 'r1', toolCallId: 'c1', result, leaseToken: 0 }),
        'getToolExecution, empty runId': (s) => s.getToolExecution('', 'c1'),
        'getToolExecution, empty toolCallId': (s) => s.getToolExecution('r1', ''),
        'listToolExecutions, empty runId': (s) => s.listToolExecutions(''),
        'acquireLease, empty threadId': (s) => s.acquireLease({ ...ok, threadId: '' }),
        'acquireLease, empty owner': (s) => s.acquireLease({ ...ok, owner: '' }),
        'acquireLease, empty runId': (s) => s.acquireLease({ ...ok, runId: '' }),
        'acquireLease, empty incarnation': (s) => s.acquireLease({ ...ok, incarnation: '' }),
        'acquireLease, ttlMs 0': (s) => s.acquireLease({ ...ok, ttlMs: 0 }),
        'acquireLease, ttlMs 1.5': (s) => s.acquireLease({ ...ok, ttlMs: 1.5 }),
        'renewLease, empty threadId': (s) => s.renewLease({ threadId: '', token: 1, ttlMs: 10 }),
        'renewLease, ttlMs 0': (s) => s.renewLease({ threadId: 't1', token: 1, ttlMs: 0 }),
        'releaseLease, empty threadId': (s) => s.releaseLease({ threadId: '', token: 1 }),
        'releaseLease, token 0': (s) => s.releaseLease({ threadId: 't1', token: 0 }),
        'getLease, empty id': (s) => s.getLease(''),
      };
      const accepted: string[] = [];
      for (const [name, call] of Object.entries(calls)) {
        const outcome = await call(store).then(
          () => 'resolved',
          (error: unknown) => (LunationError.hasCode(error, 'invalid-argument') ? undefined : String(error)),
        );
        if (outcome !== undefined) accepted.push(`${name}: ${outcome}`);
      }
      expect(accepted).toEqual([]);
      expect((await store.listThreads()).items.map((thread) => thread.id)).toEqual(['t1']);
      expect(await store.getLease('t1')).toBeUndefined();
      expect(await store.listToolExecutions('r1')).toEqual([]);
      await expectUntouched('t1');
    });

    it('refuses every call once closed with store-unavailable, not retryable; closing again is a no-op', async () => {
      const { store } = context;
      await store.createThread({ id: 't1' });
      await store.close();
      await store.close();
      const calls: Record<string, () => Promise<unknown>> = {
        createThread: () => store.createThread({ id: 't2' }),
        getThread: () => store.getThread('t1'),
        listThreads: () => store.listThreads(),
        commit: () => store.commit({ threadId: 't1', expectedMessageCount: 0, messages: [] }),
        loadCheckpoint: () => store.loadCheckpoint('t1'),
        acquireLease: () => store.acquireLease({ threadId: 't1', owner: 'o', runId: 'r1', ttlMs: 1_000 }),
        getToolExecution: () => store.getToolExecution('r1', 'c1'),
      };
      for (const [name, call] of Object.entries(calls)) {
        const error = await expectLunationError(call(), 'store-unavailable');
        expect(error.isRetryable, name).toBe(false);
      }
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
