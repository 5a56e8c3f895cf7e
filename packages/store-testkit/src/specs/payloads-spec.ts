import type { Message } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import {
  makeAssistantMessage,
  makeBeginToolExecutionInput,
  makeRunRecord,
  makeToolResult,
  makeUserMessage,
  uniqueId,
} from '../fixtures.js';
import type { StoreSpecContext } from '../store-spec-context.js';
import { appendMessages, createThread } from './spec-helpers.js';

/** Text a store must keep byte for byte: emoji (ZWJ sequences, flags, skin tones), astral, RTL, combining. */
const unicodeSamples = [
  'emoji 🌙🚀 family 👨‍👩‍👧‍👦 flag 🇵🇹 skin 👍🏽',
  'astral 𝌆 𝄞 𠜎 𐍈',
  'RTL العربية مرحبا بالعالم · עברית שלום',
  'combining e\u0301 vs precomposed \u00e9 · Å vs A\u030a',
  'CJK 月の満ち欠け · 한국어 · हिन्दी',
  'invisible \u200b\u200d\u2060\ufeff · separators \u2028\u2029',
  'controls \t\n\r\u0001\u001f and escapes \\ " \' ` {{x}} $x </script>',
];

/** Large payloads and unusual text. */
export function payloadsSpec(context: StoreSpecContext): void {
  describe('payloads', () => {
    it('round-trips a 1 MB message exactly', async () => {
      const thread = await createThread(context.store);
      const chunk = 'Lunation 🌙 stores everything. ';
      const text = chunk.repeat(Math.ceil((1024 * 1024) / chunk.length)).slice(0, 1024 * 1024);
      const big = makeAssistantMessage(text);
      await appendMessages(context.store, thread.id, [makeUserMessage('small'), big]);
      const records = await context.store.listMessages(thread.id);
      expect(records).toHaveLength(2);
      const stored = records[1]?.message;
      expect(stored?.content[0]?.type).toBe('text');
      const storedText = stored?.content[0]?.type === 'text' ? stored.content[0].text : '';
      expect(storedText.length).toBe(1024 * 1024);
      expect(storedText === text).toBe(true);
      expect(stored).toEqual(big);
      const checkpoint = await context.store.loadCheckpoint(thread.id);
      expect(checkpoint?.messages[1]?.message).toEqual(big);
    });

    it('round-trips a 1 MB tool result and thread state', async () => {
      const thread = await createThread(context.store);
      const blob = 'x'.repeat(1024 * 1024);
      const run = makeRunRecord({ threadId: thread.id });
      await appendMessages(context.store, thread.id, 0, { run, threadState: { blob } });
      expect((await context.store.getThreadState(thread.id)).blob).toBe(blob);
      const input = makeBeginToolExecutionInput({ threadId: thread.id, runId: run.identity.runId });
      await context.store.beginToolExecution(input);
      await context.store.completeToolExecution({
        runId: input.runId,
        toolCallId: input.toolCallId,
        result: makeToolResult({ blob }),
      });
      const entry = await context.store.getToolExecution(input.runId, input.toolCallId);
      expect(entry?.result).toEqual(makeToolResult({ blob }));
    });

    it('keeps unicode exactly (no normalisation) in ids, metadata, messages, state, runs and ledger', async () => {
      const threadId = uniqueId('thread-🌙-שלום-𝌆');
      const resourceId = 'user-مرحبا-👩‍💻';
      const metadata = Object.fromEntries(
        unicodeSamples.map((sample, index) => [`${index}:${sample}`, sample]),
      );
      const thread = await context.store.createThread({ id: threadId, resourceId, metadata });
      expect(thread.id).toBe(threadId);
      expect((await context.store.getThread(threadId))?.metadata).toEqual(metadata);
      expect((await context.store.listThreads({ resourceId })).items.map((item) => item.id)).toEqual([
        threadId,
      ]);

      const messages: Message[] = unicodeSamples.map((sample) => makeUserMessage(sample));
      const runId = uniqueId('run-🚀');
      const run = makeRunRecord(
        { threadId, runId },
        { finalText: unicodeSamples.join('\n'), state: metadata },
      );
      await appendMessages(context.store, threadId, messages, {
        run,
        threadState: { samples: unicodeSamples },
      });

      const records = await context.store.listMessages(threadId);
      expect(records.map((record) => record.message)).toEqual(messages);
      for (const [index, record] of records.entries()) {
        const part = record.message.content[0];
        expect(part?.type === 'text' ? part.text : undefined).toBe(unicodeSamples[index]);
      }
      expect(await context.store.getThreadState(threadId)).toEqual({ samples: unicodeSamples });
      expect(await context.store.getRun(runId)).toEqual(run);
      expect((await context.store.getLatestRun(threadId))?.identity.runId).toBe(runId);

      const toolCallId = 'call-👍🏽';
      const input = makeBeginToolExecutionInput({ threadId, runId, toolCallId, toolName: 'rechercher' });
      await context.store.beginToolExecution(input);
      const result = makeToolResult({ samples: unicodeSamples });
      await context.store.completeToolExecution({ runId, toolCallId, result });
      expect((await context.store.getToolExecution(runId, toolCallId))?.result).toEqual(result);

      const lease = await context.store.acquireLease({ threadId, owner: 'ワーカー-1', runId, ttlMs: 30_000 });
      expect(await context.store.getLease(threadId)).toEqual(lease);
      expect(lease.owner).toBe('ワーカー-1');
      expect(await context.store.deleteThread(threadId)).toBe(true);
      expect(await context.store.getThread(threadId)).toBeUndefined();
    });

    it('distinguishes ids that differ only by normalisation or case', async () => {
      const composed = `${uniqueId('thread')}-\u00e9`;
      const decomposed = composed.replace('\u00e9', 'e\u0301');
      const upper = composed.toUpperCase();
      await context.store.createThread({ id: composed, metadata: { form: 'composed' } });
      await context.store.createThread({ id: decomposed, metadata: { form: 'decomposed' } });
      await context.store.createThread({ id: upper, metadata: { form: 'upper' } });
      expect((await context.store.getThread(composed))?.metadata).toEqual({ form: 'composed' });
      expect((await context.store.getThread(decomposed))?.metadata).toEqual({ form: 'decomposed' });
      expect((await context.store.getThread(upper))?.metadata).toEqual({ form: 'upper' });
    });

    it('stores hundreds of messages in one commit and in many', async () => {
      const thread = await createThread(context.store);
      await appendMessages(context.store, thread.id, 300);
      for (let index = 0; index < 20; index += 1) {
        await appendMessages(context.store, thread.id, [
          makeUserMessage(`q${index}`),
          makeAssistantMessage(`a${index}`),
        ]);
      }
      const records = await context.store.listMessages(thread.id);
      expect(records).toHaveLength(340);
      expect(records.map((record) => record.seq)).toEqual(
        Array.from({ length: 340 }, (_, index) => index + 1),
      );
      expect((await context.store.getThread(thread.id))?.messageCount).toBe(340);
      expect(
        (await context.store.listMessages(thread.id, { fromSeq: 339 })).map((record) => record.message.role),
      ).toEqual(['user', 'assistant']);
    });
  });
}
