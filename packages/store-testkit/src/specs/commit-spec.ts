import { describe, expect, it } from 'vitest';
import {
  expectLunationError,
  makeAssistantMessage,
  makeRunRecord,
  makeToolExecution,
  makeToolResult,
  makeUserMessage,
  sleep,
  uniqueId,
} from '../fixtures.js';
import type { StoreSpecContext } from '../store-spec-context.js';
import { appendMessages, createThread } from './spec-helpers.js';

/** commit: what it writes, conflicts, stale leases, and that a failed commit writes nothing. */
export function commitSpec(context: StoreSpecContext): void {
  describe('commit', () => {
    /** A thread with two messages, a run, state and one ledger entry, plus a snapshot of all of it. */
    async function seededThread() {
      const thread = await createThread(context.store);
      const run = makeRunRecord({ threadId: thread.id });
      const entry = makeToolExecution({ threadId: thread.id, runId: run.identity.runId });
      await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 0,
        messages: [makeUserMessage('first'), makeAssistantMessage('second')],
        run,
        threadState: { version: 1 },
        toolExecutions: [entry],
      });
      return { thread, run, entry, snapshot: await snapshot(thread.id, run.identity.runId) };
    }

    async function snapshot(threadId: string, runId: string) {
      return {
        thread: await context.store.getThread(threadId),
        messages: await context.store.listMessages(threadId),
        state: await context.store.getThreadState(threadId),
        run: await context.store.getRun(runId),
        runs: await context.store.listRuns(threadId),
        ledger: await context.store.listToolExecutions(runId),
      };
    }

    /** The changes of a step that must not land: new messages, a new run, new state and new ledger entries. */
    function rejectedChanges(threadId: string, runId: string) {
      const newRun = makeRunRecord({ threadId });
      return {
        newRun,
        changes: {
          messages: [makeAssistantMessage('must not be written')],
          run: newRun,
          threadState: { version: 99 },
          toolExecutions: [
            makeToolExecution({ threadId, runId }, { status: 'completed', result: makeToolResult('x') }),
            makeToolExecution({ threadId, runId: newRun.identity.runId }),
          ],
        },
      };
    }

    it('appends, upserts, replaces state, bumps messageCount and updatedAt, and returns the count', async () => {
      const thread = await createThread(context.store);
      await sleep(3);
      const run = makeRunRecord({ threadId: thread.id });
      const result = await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 0,
        messages: [makeUserMessage('q'), makeAssistantMessage('a')],
        run,
        threadState: { step: 1 },
      });
      expect(result).toEqual({ messageCount: 2 });
      const after = await context.store.getThread(thread.id);
      expect(after?.messageCount).toBe(2);
      expect(after?.createdAt).toBe(thread.createdAt);
      expect(after?.updatedAt).toBeGreaterThan(thread.updatedAt);
      expect(await context.store.getRun(run.identity.runId)).toEqual(run);
      expect(await context.store.getThreadState(thread.id)).toEqual({ step: 1 });

      await sleep(3);
      const second = await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 2,
        messages: [makeUserMessage('q2')],
      });
      expect(second).toEqual({ messageCount: 3 });
      expect((await context.store.getThread(thread.id))?.updatedAt).toBeGreaterThan(after!.updatedAt);
    });

    it('a commit without messages keeps messageCount and still writes the run and state', async () => {
      const thread = await createThread(context.store);
      await appendMessages(context.store, thread.id, 2);
      const run = makeRunRecord(
        { threadId: thread.id },
        { status: 'done', termination: { type: 'natural-end' } },
      );
      const result = await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 2,
        messages: [],
        run,
        threadState: { closed: true },
      });
      expect(result).toEqual({ messageCount: 2 });
      expect((await context.store.getThread(thread.id))?.messageCount).toBe(2);
      expect(await context.store.listMessages(thread.id)).toHaveLength(2);
      expect(await context.store.getRun(run.identity.runId)).toEqual(run);
      expect(await context.store.getThreadState(thread.id)).toEqual({ closed: true });
    });

    it('upserts the ledger entries it carries', async () => {
      const thread = await createThread(context.store);
      const runId = uniqueId('run');
      const first = makeToolExecution({ threadId: thread.id, runId, toolCallId: 'call-a' });
      const second = makeToolExecution({ threadId: thread.id, runId, toolCallId: 'call-b' });
      await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 0,
        messages: [],
        toolExecutions: [first, second],
      });
      expect(await context.store.getToolExecution(runId, 'call-a')).toEqual(first);
      expect(await context.store.listToolExecutions(runId)).toEqual([first, second]);
      const completed = {
        ...first,
        status: 'completed' as const,
        result: makeToolResult(7),
        completedAt: Date.now(),
      };
      await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 0,
        messages: [],
        toolExecutions: [completed],
      });
      expect(await context.store.getToolExecution(runId, 'call-a')).toEqual(completed);
      expect(await context.store.listToolExecutions(runId)).toEqual([completed, second]);
    });

    it('never changes a completed ledger entry', async () => {
      const thread = await createThread(context.store);
      const runId = uniqueId('run');
      const inFlight = makeToolExecution({ threadId: thread.id, runId, toolCallId: 'call-a' });
      const completed = {
        ...inFlight,
        status: 'completed' as const,
        result: makeToolResult(1),
        completedAt: Date.now(),
      };
      await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 0,
        messages: [],
        toolExecutions: [completed],
      });
      await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 0,
        messages: [makeUserMessage()],
        toolExecutions: [inFlight, { ...completed, result: makeToolResult(2), attempts: 3 }],
      });
      expect(await context.store.getToolExecution(runId, 'call-a')).toEqual(completed);
      expect(await context.store.listMessages(thread.id)).toHaveLength(1);
    });

    it('applies two ledger entries for one call in one commit in order: the later wins, a completed one is final', async () => {
      const thread = await createThread(context.store);
      const runId = uniqueId('run');
      const running = makeToolExecution({ threadId: thread.id, runId, toolCallId: 'call-a' });
      const completed = {
        ...running,
        status: 'completed' as const,
        result: makeToolResult(1),
        completedAt: Date.now(),
      };
      const other = makeToolExecution({ threadId: thread.id, runId, toolCallId: 'call-b' });
      await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 0,
        messages: [],
        toolExecutions: [running, other, completed],
      });
      expect(await context.store.listToolExecutions(runId)).toEqual([completed, other]);
      const later = { ...other, attempts: 2 };
      const laterCompleted = {
        ...later,
        status: 'completed' as const,
        result: makeToolResult(2),
        completedAt: 1,
      };
      await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 0,
        messages: [],
        toolExecutions: [laterCompleted, { ...laterCompleted, result: makeToolResult(3) }, later],
      });
      expect(await context.store.getToolExecution(runId, 'call-b')).toEqual(laterCompleted);
      expect(await context.store.listToolExecutions(runId)).toHaveLength(2);
    });

    it('attributes messages to commit.runId when the commit carries no run record', async () => {
      const thread = await createThread(context.store);
      const run = makeRunRecord({ threadId: thread.id });
      await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 0,
        messages: [makeUserMessage('with run')],
        run,
      });
      await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 1,
        messages: [makeAssistantMessage('without run')],
        runId: run.identity.runId,
      });
      await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 2,
        messages: [makeUserMessage()],
      });
      const records = await context.store.listMessages(thread.id);
      expect(records.map((record) => record.runId)).toEqual([
        run.identity.runId,
        run.identity.runId,
        undefined,
      ]);
      expect((await context.store.loadCheckpoint(thread.id))?.messages[1]?.runId).toBe(run.identity.runId);
    });

    it('fails with not-found for an unknown thread and writes nothing', async () => {
      const threadId = uniqueId('missing');
      const run = makeRunRecord({ threadId });
      const entry = makeToolExecution({ threadId, runId: run.identity.runId });
      await expectLunationError(
        context.store.commit({
          threadId,
          expectedMessageCount: 0,
          messages: [makeUserMessage()],
          run,
          threadState: { a: 1 },
          toolExecutions: [entry],
        }),
        'not-found',
      );
      expect(await context.store.getThread(threadId)).toBeUndefined();
      expect(await context.store.getRun(run.identity.runId)).toBeUndefined();
      expect(await context.store.getToolExecution(run.identity.runId, entry.toolCallId)).toBeUndefined();
    });

    it('fails with store-conflict for a stale (lower) expectedMessageCount and writes nothing', async () => {
      const { thread, run, snapshot: before } = await seededThread();
      const { newRun, changes } = rejectedChanges(thread.id, run.identity.runId);
      await sleep(3);
      await expectLunationError(
        context.store.commit({ threadId: thread.id, expectedMessageCount: 1, ...changes }),
        'store-conflict',
      );
      expect(await snapshot(thread.id, run.identity.runId)).toEqual(before);
      expect(await context.store.getRun(newRun.identity.runId)).toBeUndefined();
      expect(await context.store.listToolExecutions(newRun.identity.runId)).toEqual([]);
    });

    it('fails with store-conflict for an expectedMessageCount ahead of the thread and writes nothing', async () => {
      const { thread, run, snapshot: before } = await seededThread();
      const { newRun, changes } = rejectedChanges(thread.id, run.identity.runId);
      await expectLunationError(
        context.store.commit({ threadId: thread.id, expectedMessageCount: 3, ...changes }),
        'store-conflict',
      );
      expect(await snapshot(thread.id, run.identity.runId)).toEqual(before);
      expect(await context.store.getRun(newRun.identity.runId)).toBeUndefined();
    });

    it('fails with store-conflict on a brand-new thread when expectedMessageCount is not 0', async () => {
      const thread = await createThread(context.store);
      await expectLunationError(
        context.store.commit({ threadId: thread.id, expectedMessageCount: 1, messages: [makeUserMessage()] }),
        'store-conflict',
      );
      expect(await context.store.getThread(thread.id)).toEqual(thread);
      expect(await context.store.listMessages(thread.id)).toEqual([]);
    });

    it('fails with stale-lease when a newer lease token was issued, and writes nothing', async () => {
      const { thread, run, snapshot: before } = await seededThread();
      const old = await context.store.acquireLease({
        threadId: thread.id,
        owner: 'a',
        runId: 'r1',
        ttlMs: 60_000,
      });
      expect(await context.store.releaseLease({ threadId: thread.id, token: old.token })).toBe(true);
      const current = await context.store.acquireLease({
        threadId: thread.id,
        owner: 'b',
        runId: 'r2',
        ttlMs: 60_000,
      });
      expect(current.token).toBeGreaterThan(old.token);

      const { newRun, changes } = rejectedChanges(thread.id, run.identity.runId);
      await expectLunationError(
        context.store.commit({
          threadId: thread.id,
          expectedMessageCount: 2,
          leaseToken: old.token,
          ...changes,
        }),
        'stale-lease',
      );
      expect(await snapshot(thread.id, run.identity.runId)).toEqual(before);
      expect(await context.store.getRun(newRun.identity.runId)).toBeUndefined();
      expect(await context.store.listToolExecutions(newRun.identity.runId)).toEqual([]);

      const result = await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 2,
        leaseToken: current.token,
        ...changes,
      });
      expect(result).toEqual({ messageCount: 3 });
      expect(await context.store.getRun(newRun.identity.runId)).toEqual(newRun);
      expect(await context.store.getThreadState(thread.id)).toEqual({ version: 99 });
    });

    it('accepts the latest token after its lease expired (fencing compares tokens, not time)', async () => {
      const thread = await createThread(context.store);
      const lease = await context.store.acquireLease({
        threadId: thread.id,
        owner: 'a',
        runId: 'r1',
        ttlMs: 50,
      });
      await sleep(80);
      expect(await context.store.getLease(thread.id)).toBeUndefined();
      const result = await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 0,
        messages: [makeUserMessage()],
        leaseToken: lease.token,
      });
      expect(result).toEqual({ messageCount: 1 });
    });

    it('accepts the latest token after its lease was released, until the next acquisition fences it', async () => {
      const thread = await createThread(context.store);
      const lease = await context.store.acquireLease({
        threadId: thread.id,
        owner: 'a',
        runId: 'r1',
        ttlMs: 60_000,
      });
      expect(await context.store.releaseLease({ threadId: thread.id, token: lease.token })).toBe(true);
      const answer = makeAssistantMessage('late');
      expect(
        await context.store.commit({
          threadId: thread.id,
          expectedMessageCount: 0,
          messages: [answer],
          leaseToken: lease.token,
        }),
      ).toEqual({ messageCount: 1 });
      const next = await context.store.acquireLease({
        threadId: thread.id,
        owner: 'b',
        runId: 'r1',
        ttlMs: 60_000,
      });
      // What the late commit wrote is there for the next holder to read once it holds the thread.
      expect(
        (await context.store.loadCheckpoint(thread.id))?.messages.map((record) => record.message),
      ).toEqual([answer]);
      await expectLunationError(
        context.store.commit({
          threadId: thread.id,
          expectedMessageCount: 1,
          messages: [answer],
          leaseToken: lease.token,
        }),
        'stale-lease',
      );
      expect(next.token).toBeGreaterThan(lease.token);
      expect(await context.store.listMessages(thread.id)).toHaveLength(1);
    });

    it('refuses a lease token that was never issued (lease-lost) and writes nothing', async () => {
      const thread = await createThread(context.store);
      // A thread never leased: any token is one that was never issued.
      await expectLunationError(
        context.store.commit({
          threadId: thread.id,
          expectedMessageCount: 0,
          messages: [makeUserMessage()],
          leaseToken: 1,
        }),
        'lease-lost',
      );
      const lease = await context.store.acquireLease({
        threadId: thread.id,
        owner: 'a',
        runId: 'r1',
        ttlMs: 60_000,
      });
      const error = await expectLunationError(
        context.store.commit({
          threadId: thread.id,
          expectedMessageCount: 0,
          messages: [makeUserMessage()],
          leaseToken: lease.token + 1,
        }),
        'lease-lost',
      );
      expect(error.details).toMatchObject({
        threadId: thread.id,
        token: lease.token + 1,
        latestToken: lease.token,
      });
      expect(await context.store.listMessages(thread.id)).toEqual([]);
      expect(
        await context.store.commit({
          threadId: thread.id,
          expectedMessageCount: 0,
          messages: [makeUserMessage()],
          leaseToken: lease.token,
        }),
      ).toEqual({ messageCount: 1 });
    });

    it('refuses a commit without a lease token while the thread is leased (thread-busy), and accepts it once released', async () => {
      const thread = await createThread(context.store);
      expect(
        await context.store.commit({
          threadId: thread.id,
          expectedMessageCount: 0,
          messages: [makeUserMessage()],
        }),
      ).toEqual({ messageCount: 1 });
      const lease = await context.store.acquireLease({
        threadId: thread.id,
        owner: 'a',
        runId: 'r1',
        ttlMs: 60_000,
      });
      await expectLunationError(
        context.store.commit({ threadId: thread.id, expectedMessageCount: 1, messages: [makeUserMessage()] }),
        'thread-busy',
      );
      expect(await context.store.listMessages(thread.id)).toHaveLength(1);
      expect(await context.store.releaseLease({ threadId: thread.id, token: lease.token })).toBe(true);
      expect(
        await context.store.commit({
          threadId: thread.id,
          expectedMessageCount: 1,
          messages: [makeUserMessage()],
        }),
      ).toEqual({ messageCount: 2 });
    });

    it('accepts a commit without a lease token once the lease expired', async () => {
      const thread = await createThread(context.store);
      await context.store.acquireLease({ threadId: thread.id, owner: 'a', runId: 'r1', ttlMs: 50 });
      await sleep(80);
      expect(
        await context.store.commit({
          threadId: thread.id,
          expectedMessageCount: 0,
          messages: [makeUserMessage()],
        }),
      ).toEqual({ messageCount: 1 });
    });

    it('refuses messages without a known role or a content array (invalid-argument) and writes nothing', async () => {
      const thread = await createThread(context.store);
      const malformed: unknown[] = [
        { id: 'm1', content: [{ type: 'text', text: 'no role' }] },
        { id: 'm2', role: 'robot', content: [] },
        { id: 'm3', role: 'user' },
        { id: 'm4', role: 'user', content: 'text, not parts' },
        null,
        'a string',
      ];
      for (const message of malformed) {
        await expectLunationError(
          context.store.commit({
            threadId: thread.id,
            expectedMessageCount: 0,
            messages: [makeUserMessage(), message as never],
          }),
          'invalid-argument',
        );
      }
      expect(await context.store.listMessages(thread.id)).toEqual([]);
      expect((await context.store.getThread(thread.id))?.messageCount).toBe(0);
    });

    it('of two racing commits on one store with the same expectedMessageCount, exactly one succeeds', async () => {
      const thread = await createThread(context.store);
      for (let round = 0; round < 5; round += 1) {
        const contenders = [makeUserMessage(`left ${round}`), makeUserMessage(`right ${round}`)];
        const outcomes = await Promise.allSettled(
          contenders.map((message) =>
            context.store.commit({ threadId: thread.id, expectedMessageCount: round, messages: [message] }),
          ),
        );
        const fulfilled = outcomes.filter((outcome) => outcome.status === 'fulfilled');
        const rejected = outcomes.filter((outcome) => outcome.status === 'rejected');
        expect(fulfilled).toHaveLength(1);
        expect(fulfilled[0]?.value).toEqual({ messageCount: round + 1 });
        expect(rejected).toHaveLength(1);
        await expectLunationError(Promise.reject(rejected[0]?.reason), 'store-conflict');
      }
      const records = await context.store.listMessages(thread.id);
      expect(records.map((record) => record.seq)).toEqual([1, 2, 3, 4, 5]);
      expect((await context.store.getThread(thread.id))?.messageCount).toBe(5);
    });
  });
}
