import { toolExecutionSchema } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import {
  expectLunationError,
  makeBeginToolExecutionInput,
  makeToolResult,
  sleep,
  uniqueId,
} from '../fixtures.js';
import type { StoreSpecContext } from '../store-spec-context.js';
import { createThread, expectSchema, expectTimestampBetween } from './spec-helpers.js';

/** The tool-execution ledger: begin, complete, get and list, with lease fencing. */
export function ledgerSpec(context: StoreSpecContext): void {
  describe('tool-execution ledger', () => {
    async function begunInput() {
      const thread = await createThread(context.store);
      return makeBeginToolExecutionInput({
        threadId: thread.id,
        runId: uniqueId('run'),
        toolName: 'send_email',
      });
    }

    it('completing an entry twice keeps the first result', async () => {
      const input = await begunInput();
      await context.store.beginToolExecution(input);
      const first = await context.store.completeToolExecution({
        runId: input.runId,
        toolCallId: input.toolCallId,
        result: makeToolResult(1),
      });
      const again = await context.store.completeToolExecution({
        runId: input.runId,
        toolCallId: input.toolCallId,
        result: makeToolResult(2),
      });
      expect(again).toEqual(first);
      expect((await context.store.getToolExecution(input.runId, input.toolCallId))?.result).toEqual(
        makeToolResult(1),
      );
    });

    it('beginToolExecution writes an in-flight entry with attempts 1', async () => {
      const input = await begunInput();
      const before = Date.now();
      const entry = await context.store.beginToolExecution(input);
      const after = Date.now();
      expectSchema(toolExecutionSchema, entry);
      expect(entry).toEqual({
        runId: input.runId,
        toolCallId: input.toolCallId,
        threadId: input.threadId,
        toolName: 'send_email',
        idempotencyKey: input.idempotencyKey,
        status: 'in-flight',
        attempts: 1,
        startedAt: expect.any(Number),
      });
      expect(entry.result).toBeUndefined();
      expect(entry.completedAt).toBeUndefined();
      expectTimestampBetween(entry.startedAt, before, after);
      expect(await context.store.getToolExecution(input.runId, input.toolCallId)).toEqual(entry);
    });

    it('beginToolExecution on an in-flight entry counts another attempt and stays in-flight', async () => {
      const input = await begunInput();
      await context.store.beginToolExecution(input);
      const second = await context.store.beginToolExecution(input);
      expect(second.status).toBe('in-flight');
      expect(second.attempts).toBe(2);
      const third = await context.store.beginToolExecution(input);
      expect(third.attempts).toBe(3);
      expect(third.idempotencyKey).toBe(input.idempotencyKey);
      expect(await context.store.getToolExecution(input.runId, input.toolCallId)).toEqual(third);
      expect(await context.store.listToolExecutions(input.runId)).toHaveLength(1);
    });

    it('completeToolExecution stores the result and completedAt; a later begin changes nothing', async () => {
      const input = await begunInput();
      await context.store.beginToolExecution(input);
      await context.store.beginToolExecution(input);
      const result = makeToolResult({ messageId: 'mail-1', recipients: ['a@example.com'] });
      const before = Date.now();
      const completed = await context.store.completeToolExecution({
        runId: input.runId,
        toolCallId: input.toolCallId,
        result,
      });
      const after = Date.now();
      expectSchema(toolExecutionSchema, completed);
      expect(completed.status).toBe('completed');
      expect(completed.result).toEqual(result);
      expect(completed.attempts).toBe(2);
      expectTimestampBetween(completed.completedAt, before, after);
      expect(await context.store.getToolExecution(input.runId, input.toolCallId)).toEqual(completed);

      const again = await context.store.beginToolExecution(input);
      expect(again).toEqual(completed);
      expect(await context.store.getToolExecution(input.runId, input.toolCallId)).toEqual(completed);
    });

    it('completeToolExecution fails with not-found when nothing was begun', async () => {
      const runId = uniqueId('run');
      await expectLunationError(
        context.store.completeToolExecution({ runId, toolCallId: 'never', result: makeToolResult() }),
        'not-found',
      );
      expect(await context.store.getToolExecution(runId, 'never')).toBeUndefined();
    });

    it('getToolExecution and listToolExecutions return nothing for unknown ids', async () => {
      const input = await begunInput();
      await context.store.beginToolExecution(input);
      expect(await context.store.getToolExecution(input.runId, 'other-call')).toBeUndefined();
      expect(await context.store.getToolExecution(uniqueId('run'), input.toolCallId)).toBeUndefined();
      expect(await context.store.listToolExecutions(uniqueId('run'))).toEqual([]);
    });

    it('listToolExecutions returns the entries of one run in start order', async () => {
      const thread = await createThread(context.store);
      const runId = uniqueId('run');
      const otherRunId = uniqueId('run');
      const calls = ['call-z', 'call-a', 'call-m'];
      for (const toolCallId of calls) {
        await context.store.beginToolExecution(
          makeBeginToolExecutionInput({ threadId: thread.id, runId, toolCallId }),
        );
        await sleep(2);
      }
      await context.store.beginToolExecution(
        makeBeginToolExecutionInput({ threadId: thread.id, runId: otherRunId, toolCallId: 'call-other' }),
      );
      await context.store.completeToolExecution({ runId, toolCallId: 'call-a', result: makeToolResult() });
      const list = await context.store.listToolExecutions(runId);
      expect(list.map((entry) => entry.toolCallId)).toEqual(calls);
      expect(list.map((entry) => entry.status)).toEqual(['in-flight', 'completed', 'in-flight']);
      expect((await context.store.listToolExecutions(otherRunId)).map((entry) => entry.toolCallId)).toEqual([
        'call-other',
      ]);
    });

    it('begin and complete fail with stale-lease for an old token and write nothing', async () => {
      const input = await begunInput();
      const threadId = input.threadId;
      const old = await context.store.acquireLease({
        threadId,
        owner: 'a',
        runId: input.runId,
        ttlMs: 60_000,
      });
      await context.store.releaseLease({ threadId, token: old.token });
      const current = await context.store.acquireLease({
        threadId,
        owner: 'b',
        runId: input.runId,
        ttlMs: 60_000,
      });

      await expectLunationError(
        context.store.beginToolExecution({ ...input, leaseToken: old.token }),
        'stale-lease',
      );
      expect(await context.store.getToolExecution(input.runId, input.toolCallId)).toBeUndefined();

      const begun = await context.store.beginToolExecution({ ...input, leaseToken: current.token });
      expect(begun.attempts).toBe(1);
      await expectLunationError(
        context.store.beginToolExecution({ ...input, leaseToken: old.token }),
        'stale-lease',
      );
      expect((await context.store.getToolExecution(input.runId, input.toolCallId))?.attempts).toBe(1);

      await expectLunationError(
        context.store.completeToolExecution({
          runId: input.runId,
          toolCallId: input.toolCallId,
          result: makeToolResult('late'),
          leaseToken: old.token,
        }),
        'stale-lease',
      );
      expect(await context.store.getToolExecution(input.runId, input.toolCallId)).toEqual(begun);

      const completed = await context.store.completeToolExecution({
        runId: input.runId,
        toolCallId: input.toolCallId,
        result: makeToolResult('on time'),
        leaseToken: current.token,
      });
      expect(completed.status).toBe('completed');
      expect(completed.result).toEqual(makeToolResult('on time'));
    });
  });
}
