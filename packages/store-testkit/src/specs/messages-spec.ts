import { type Message, messageRecordSchema } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import {
  makeAssistantMessage,
  makeRunRecord,
  makeToolMessage,
  makeToolResult,
  makeUserMessage,
  uniqueId,
} from '../fixtures.js';
import type { StoreSpecContext } from '../store-spec-context.js';
import { appendMessages, createThread, expectSchema, expectTimestampBetween } from './spec-helpers.js';

/** Message append through commit, seq numbering and listMessages ranges. */
export function messagesSpec(context: StoreSpecContext): void {
  describe('messages', () => {
    it('commit appends messages numbered 1, 2, 3 with threadId and createdAt', async () => {
      const thread = await createThread(context.store);
      const messages = [makeUserMessage('one'), makeAssistantMessage('two'), makeUserMessage('three')];
      const before = Date.now();
      await appendMessages(context.store, thread.id, messages);
      const after = Date.now();
      const records = await context.store.listMessages(thread.id);
      expect(records).toHaveLength(3);
      records.forEach((record, index) => {
        expectSchema(messageRecordSchema, record);
        expect(record.threadId).toBe(thread.id);
        expect(record.seq).toBe(index + 1);
        expect(record.message).toEqual(messages[index]);
        expect(record.runId).toBeUndefined();
        expectTimestampBetween(record.createdAt, before, after);
      });
    });

    it('seq continues across commits and messages stay in commit order', async () => {
      const thread = await createThread(context.store);
      const first = await appendMessages(context.store, thread.id, [
        makeUserMessage('a'),
        makeAssistantMessage('b'),
      ]);
      const second = await appendMessages(context.store, thread.id, [
        makeUserMessage('c'),
        makeAssistantMessage('d'),
        makeUserMessage('e'),
      ]);
      const records = await context.store.listMessages(thread.id);
      expect(records.map((record) => record.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(records.map((record) => record.message)).toEqual([...first, ...second]);
      expect((await context.store.getThread(thread.id))?.messageCount).toBe(5);
    });

    it('listMessages honours fromSeq, toSeq (both inclusive) and limit', async () => {
      const thread = await createThread(context.store);
      await appendMessages(context.store, thread.id, 10);
      const seqs = async (options: Parameters<typeof context.store.listMessages>[1]) =>
        (await context.store.listMessages(thread.id, options)).map((record) => record.seq);
      expect(await seqs({})).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect(await seqs({ fromSeq: 3 })).toEqual([3, 4, 5, 6, 7, 8, 9, 10]);
      expect(await seqs({ toSeq: 4 })).toEqual([1, 2, 3, 4]);
      expect(await seqs({ fromSeq: 3, toSeq: 6 })).toEqual([3, 4, 5, 6]);
      expect(await seqs({ fromSeq: 5, toSeq: 5 })).toEqual([5]);
      expect(await seqs({ fromSeq: 3, limit: 2 })).toEqual([3, 4]);
      expect(await seqs({ limit: 3 })).toEqual([1, 2, 3]);
      expect(await seqs({ fromSeq: 2, toSeq: 9, limit: 4 })).toEqual([2, 3, 4, 5]);
      expect(await seqs({ fromSeq: 8, toSeq: 20 })).toEqual([8, 9, 10]);
      expect(await seqs({ fromSeq: 11 })).toEqual([]);
      expect(await seqs({ fromSeq: 6, toSeq: 5 })).toEqual([]);
      const middle = await context.store.listMessages(thread.id, { fromSeq: 4, toSeq: 4 });
      expect(middle[0]?.message).toEqual(makeUserMessageLike('message 4'));
    });

    it('records carry the runId of the commit that wrote them', async () => {
      const thread = await createThread(context.store);
      const firstRun = makeRunRecord({ threadId: thread.id });
      const secondRun = makeRunRecord({ threadId: thread.id });
      await appendMessages(context.store, thread.id, [makeUserMessage('q1'), makeAssistantMessage('a1')], {
        run: firstRun,
      });
      await appendMessages(context.store, thread.id, [makeUserMessage('note')]);
      await appendMessages(context.store, thread.id, [makeUserMessage('q2')], { run: secondRun });
      const records = await context.store.listMessages(thread.id);
      expect(records.map((record) => record.runId)).toEqual([
        firstRun.identity.runId,
        firstRun.identity.runId,
        undefined,
        secondRun.identity.runId,
      ]);
    });

    it("a commit's runId names its messages' run, also a run of another thread (a fork keeps the original's runs)", async () => {
      const original = await createThread(context.store);
      const run = makeRunRecord({ threadId: original.id });
      await appendMessages(context.store, original.id, [makeUserMessage('q'), makeAssistantMessage('a')], {
        run,
      });
      const fork = await createThread(context.store);
      const ownRun = makeRunRecord({ threadId: fork.id }, { status: 'running' });
      await context.store.commit({
        threadId: fork.id,
        expectedMessageCount: 0,
        messages: [makeUserMessage('q')],
        runId: run.identity.runId,
      });
      // The last copy carries the fork's own run record; its messages keep the original's run.
      await context.store.commit({
        threadId: fork.id,
        expectedMessageCount: 1,
        messages: [makeAssistantMessage('a')],
        runId: run.identity.runId,
        run: ownRun,
        threadState: { copied: true },
      });
      const records = await context.store.listMessages(fork.id);
      expect(records.map((record) => [record.seq, record.runId])).toEqual([
        [1, run.identity.runId],
        [2, run.identity.runId],
      ]);
      expect(await context.store.getRun(run.identity.runId)).toEqual(run);
      expect((await context.store.listRuns(fork.id)).items).toEqual([ownRun]);
      expect((await context.store.listRuns(original.id)).items).toEqual([run]);
      expect(await context.store.getThreadState(fork.id)).toEqual({ copied: true });
      expect((await context.store.listMessages(original.id)).map((record) => record.runId)).toEqual([
        run.identity.runId,
        run.identity.runId,
      ]);
    });

    it('keeps the messages of each thread apart', async () => {
      const left = await createThread(context.store);
      const right = await createThread(context.store);
      const leftMessages = await appendMessages(context.store, left.id, [makeUserMessage('left')]);
      const rightMessages = await appendMessages(context.store, right.id, [
        makeUserMessage('right 1'),
        makeUserMessage('right 2'),
      ]);
      expect((await context.store.listMessages(left.id)).map((record) => record.message)).toEqual(
        leftMessages,
      );
      expect((await context.store.listMessages(right.id)).map((record) => record.message)).toEqual(
        rightMessages,
      );
      expect((await context.store.listMessages(right.id)).map((record) => record.seq)).toEqual([1, 2]);
    });

    it('round-trips every message role and content part exactly', async () => {
      const thread = await createThread(context.store);
      const messages: Message[] = [
        {
          id: uniqueId('message'),
          role: 'system',
          content: [{ type: 'text', text: 'You are terse.' }],
          metadata: { visibility: 'internal' },
        },
        {
          id: uniqueId('message'),
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these pictures?' },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
            { type: 'image', source: { type: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } },
          ],
          metadata: { step: 0, createdAt: 1_700_000_000_000 },
        },
        {
          id: uniqueId('message'),
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'Look closely.', signature: 'sig-123' },
            { type: 'reasoning', text: 'b3BhcXVl', redacted: true },
            { type: 'text', text: 'Let me check.' },
            { type: 'tool-call', toolCallId: 'call-1', toolName: 'lookup', arguments: '{"q":"cat"' },
          ],
          metadata: { agentId: 'assistant', compaction: { fromSeq: 1, toSeq: 2 }, supersededTickets: [] },
        },
        makeToolMessage({
          toolCallId: 'call-1',
          result: { status: 'error', message: 'bad JSON', data: null, metadata: { retried: false } },
        }),
        makeToolMessage({
          toolCallId: 'call-2',
          result: makeToolResult([1, 'two', { three: 3 }, null, true]),
        }),
      ];
      await appendMessages(context.store, thread.id, messages);
      const records = await context.store.listMessages(thread.id);
      expect(records.map((record) => record.message)).toEqual(messages);
    });
  });
}

function makeUserMessageLike(text: string): Record<string, unknown> {
  return { id: expect.any(String), role: 'user', content: [{ type: 'text', text }] };
}
