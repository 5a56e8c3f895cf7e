import type { JsonObject, UserMessage } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import {
  makeBeginToolExecutionInput,
  makeRunRecord,
  makeToolExecution,
  makeToolResult,
  makeUserMessage,
  uniqueId,
} from '../fixtures.js';
import type { StoreSpecContext } from '../store-spec-context.js';
import { createThread } from './spec-helpers.js';

function scribble(value: unknown): void {
  if (Array.isArray(value)) {
    value.push('scribbled');
    for (const item of value.slice(0, -1)) scribble(item);
  } else if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (typeof record[key] === 'object' && record[key] !== null) scribble(record[key]);
      else record[key] = 'scribbled';
    }
    record.scribbled = true;
  }
}

/** Stored values are JSON: neither the objects passed in nor the objects returned alias store contents. */
export function isolationSpec(context: StoreSpecContext): void {
  describe('value isolation', () => {
    it('mutating the objects passed in afterwards does not change what was stored', async () => {
      const metadata: JsonObject = { title: 'Original', tags: ['a'] };
      const thread = await context.store.createThread({ id: uniqueId('thread'), metadata });
      const message: UserMessage = makeUserMessage('original text');
      const run = makeRunRecord({ threadId: thread.id }, { state: { plan: ['x'] } });
      const state: JsonObject = { nested: { count: 1 } };
      const entry = makeToolExecution(
        { threadId: thread.id, runId: run.identity.runId },
        { status: 'completed', result: makeToolResult({ v: 1 }), completedAt: Date.now() },
      );
      const expected = structuredClone({ metadata, message, run, state, entry });
      await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 0,
        messages: [message],
        run,
        threadState: state,
        toolExecutions: [entry],
      });
      const metadataUpdate: JsonObject = { title: 'Updated' };
      await context.store.updateThreadMetadata(thread.id, metadataUpdate);

      scribble(metadata);
      scribble(message);
      scribble(run);
      scribble(state);
      scribble(entry);
      scribble(metadataUpdate);

      expect((await context.store.getThread(thread.id))?.metadata).toEqual({ title: 'Updated' });
      expect((await context.store.listMessages(thread.id))[0]?.message).toEqual(expected.message);
      expect(await context.store.getRun(expected.run.identity.runId)).toEqual(expected.run);
      expect(await context.store.getThreadState(thread.id)).toEqual(expected.state);
      expect(await context.store.getToolExecution(expected.entry.runId, expected.entry.toolCallId)).toEqual(
        expected.entry,
      );
    });

    it('mutating returned objects does not change what is stored', async () => {
      const thread = await context.store.createThread({
        id: uniqueId('thread'),
        metadata: { title: 'Kept' },
      });
      const run = makeRunRecord({ threadId: thread.id }, { state: { plan: ['x'] } });
      const message = makeUserMessage('kept text');
      await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 0,
        messages: [message],
        run,
        threadState: { nested: { count: 1 } },
      });
      const input = makeBeginToolExecutionInput({ threadId: thread.id, runId: run.identity.runId });
      await context.store.beginToolExecution(input);
      await context.store.completeToolExecution({
        runId: input.runId,
        toolCallId: input.toolCallId,
        result: makeToolResult({ v: 1 }),
      });
      const lease = await context.store.acquireLease({
        threadId: thread.id,
        owner: 'w',
        runId: 'r',
        ttlMs: 30_000,
      });

      const pristine = {
        thread: await context.store.getThread(thread.id),
        checkpoint: await context.store.loadCheckpoint(thread.id),
        entry: await context.store.getToolExecution(input.runId, input.toolCallId),
      };

      scribble(await context.store.getThread(thread.id));
      scribble(await context.store.listThreads());
      scribble(await context.store.listMessages(thread.id));
      scribble(await context.store.loadCheckpoint(thread.id));
      scribble(await context.store.getRun(run.identity.runId));
      scribble(await context.store.getLatestRun(thread.id));
      scribble(await context.store.listRuns(thread.id));
      scribble(await context.store.getThreadState(thread.id));
      scribble(await context.store.getToolExecution(input.runId, input.toolCallId));
      scribble(await context.store.listToolExecutions(input.runId));
      scribble(await context.store.beginToolExecution(input));
      scribble(await context.store.getLease(thread.id));

      expect(await context.store.getThread(thread.id)).toEqual(pristine.thread);
      expect(pristine.thread?.metadata).toEqual({ title: 'Kept' });
      expect(await context.store.loadCheckpoint(thread.id)).toEqual(pristine.checkpoint);
      expect(pristine.checkpoint?.messages[0]?.message).toEqual(message);
      expect(pristine.checkpoint?.latestRun).toEqual(run);
      expect(pristine.checkpoint?.threadState).toEqual({ nested: { count: 1 } });
      expect(await context.store.getRun(run.identity.runId)).toEqual(run);
      expect(await context.store.getLatestRun(thread.id)).toEqual(run);
      expect((await context.store.listRuns(thread.id)).items).toEqual([run]);
      expect((await context.store.listThreads()).items).toEqual([pristine.thread]);
      expect((await context.store.listMessages(thread.id)).map((record) => record.message)).toEqual([
        message,
      ]);
      expect(await context.store.getThreadState(thread.id)).toEqual({ nested: { count: 1 } });
      expect(await context.store.getToolExecution(input.runId, input.toolCallId)).toEqual(pristine.entry);
      expect(await context.store.listToolExecutions(input.runId)).toEqual([pristine.entry]);
      expect(pristine.entry?.result).toEqual(makeToolResult({ v: 1 }));
      expect(await context.store.getLease(thread.id)).toEqual(lease);
    });

    it('returns JSON: undefined properties are dropped and nothing else is added', async () => {
      const thread = await createThread(context.store);
      const message = makeUserMessage('plain');
      await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 0,
        messages: [message],
        threadState: { present: 1, absent: undefined } as unknown as JsonObject,
      });
      const state = await context.store.getThreadState(thread.id);
      expect(Object.keys(state)).toEqual(['present']);
      const [record] = await context.store.listMessages(thread.id);
      expect(Object.keys(record?.message ?? {}).sort()).toEqual(Object.keys(message).sort());
    });
  });
}
