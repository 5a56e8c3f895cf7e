import { type CancelRequest, cancelRequestSchema } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { eventually, expectLunationError, sleep, uniqueId } from '../fixtures.js';

/** Cancel requests: durable, visible from every instance, told to watchers once, cleared by id. */
export function cancelSpec(context: DispatchSpecContext): void {
  describe('cancel signals', () => {
    it('a cancel request is durable and visible from another instance', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      expect(await sibling.cancelRequest(threadId)).toBeUndefined();
      const before = Date.now();
      const request = await dispatcher.requestCancel({
        threadId,
        runId: 'run-1',
        reason: 'user pressed stop',
      });
      const after = Date.now();
      expect(cancelRequestSchema.safeParse(request).success).toBe(true);
      expect(request).toEqual({
        id: expect.any(String),
        threadId,
        runId: 'run-1',
        reason: 'user pressed stop',
        requestedAt: expect.any(Number),
      });
      expect(request.requestedAt).toBeGreaterThanOrEqual(before - 1_000);
      expect(request.requestedAt).toBeLessThanOrEqual(after + 1_000);
      expect(await sibling.cancelRequest(threadId)).toEqual(request);
      expect(await sibling.cancelRequest(uniqueId('thread'))).toBeUndefined();
    });

    it('a watcher on another instance is told of each new request once; other threads do not reach it', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      const seen: CancelRequest[] = [];
      const watch = await sibling.watchCancel(threadId, (request) => seen.push(request));
      await dispatcher.requestCancel({ threadId: uniqueId('thread'), reason: 'another thread' });
      const first = await dispatcher.requestCancel({ threadId, reason: 'first' });
      await eventually(() => seen.length >= 1, 5_000, 'the watcher to see the first request');
      const second = await dispatcher.requestCancel({ threadId, reason: 'second' });
      await eventually(() => seen.length >= 2, 5_000, 'the watcher to see the second request');
      await sleep(200);
      expect(seen).toEqual([first, second]);
      watch.close();
      await dispatcher.requestCancel({ threadId, reason: 'after close' });
      const control: CancelRequest[] = [];
      const other = await sibling.watchCancel(threadId, (request) => control.push(request));
      await eventually(() => control.length === 1, 5_000, 'an open watch to see the request');
      await sleep(100);
      expect(seen).toHaveLength(2);
      other.close();
    });

    it('a watch started after the request is told of it at once', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      const request = await dispatcher.requestCancel({ threadId, reason: 'early' });
      const seen: CancelRequest[] = [];
      const watch = await sibling.watchCancel(threadId, (received) => seen.push(received));
      await eventually(() => seen.length === 1, 5_000, 'the watcher to see the earlier request');
      expect(seen).toEqual([request]);
      watch.close();
    });

    it('a newer request replaces the older; clearCancel only clears the request it names', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      const older = await dispatcher.requestCancel({ threadId, reason: 'older' });
      const newer = await sibling.requestCancel({ threadId, reason: 'newer' });
      expect(newer.id).not.toBe(older.id);
      expect(await dispatcher.cancelRequest(threadId)).toEqual(newer);
      expect(await dispatcher.clearCancel(threadId, older.id)).toBe(false);
      expect(await dispatcher.cancelRequest(threadId)).toEqual(newer);
      expect(await sibling.clearCancel(threadId, newer.id)).toBe(true);
      expect(await dispatcher.cancelRequest(threadId)).toBeUndefined();
      expect(await dispatcher.clearCancel(threadId)).toBe(false);
      await dispatcher.requestCancel({ threadId, reason: 'again' });
      expect(await dispatcher.clearCancel(threadId)).toBe(true);
      expect(await sibling.cancelRequest(threadId)).toBeUndefined();
      await expectLunationError(dispatcher.requestCancel({ threadId: '', reason: 'x' }), 'invalid-argument');
    });
  });
}
