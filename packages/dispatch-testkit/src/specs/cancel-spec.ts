import { type CancelRequest, cancelRequestSchema } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { eventually, expectLunationError, sleep, uniqueId } from '../fixtures.js';

/** Cancel requests: durable, one per run named, visible from every instance, told to watchers once, cleared by id. */
export function cancelSpec(context: DispatchSpecContext): void {
  describe('cancel signals', () => {
    it('a cancel request is durable and visible from another instance', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      expect(await sibling.cancelRequests(threadId)).toEqual([]);
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
      expect(await sibling.cancelRequests(threadId)).toEqual([request]);
      expect(await sibling.cancelRequests(uniqueId('thread'))).toEqual([]);
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

    it('a newer request for the same run replaces the older; clearCancel only clears the request it names', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      const older = await dispatcher.requestCancel({ threadId, reason: 'older' });
      const newer = await sibling.requestCancel({ threadId, reason: 'newer' });
      expect(newer.id).not.toBe(older.id);
      expect(await dispatcher.cancelRequests(threadId)).toEqual([newer]);
      expect(await dispatcher.clearCancel(threadId, older.id)).toBe(false);
      expect(await dispatcher.cancelRequests(threadId)).toEqual([newer]);
      expect(await sibling.clearCancel(threadId, newer.id)).toBe(true);
      expect(await dispatcher.cancelRequests(threadId)).toEqual([]);
      expect(await dispatcher.clearCancel(threadId)).toBe(false);
      const run1 = await dispatcher.requestCancel({ threadId, runId: 'run-1', reason: 'once' });
      const run1Again = await sibling.requestCancel({ threadId, runId: 'run-1', reason: 'twice' });
      expect(await dispatcher.cancelRequests(threadId)).toEqual([run1Again]);
      expect(await dispatcher.clearCancel(threadId, run1.id)).toBe(false);
      await dispatcher.requestCancel({ threadId, reason: 'again' });
      expect(await dispatcher.clearCancel(threadId)).toBe(true);
      expect(await sibling.cancelRequests(threadId)).toEqual([]);
      await expectLunationError(dispatcher.requestCancel({ threadId: '', reason: 'x' }), 'invalid-argument');
    });

    it('a cancel request per run: requests for two runs of one thread are both held, each cleared only by its own id', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const threadId = uniqueId('thread');
      const seen: CancelRequest[] = [];
      const watch = await sibling.watchCancel(threadId, (request) => seen.push(request));
      // The user cancels run 2 (still queued), then run 1 (running): neither request may displace the other.
      const second = await dispatcher.requestCancel({ threadId, runId: 'run-2', reason: 'stop run 2' });
      await sleep(5);
      const first = await sibling.requestCancel({ threadId, runId: 'run-1', reason: 'stop run 1' });
      await sleep(5);
      const unnamed = await dispatcher.requestCancel({ threadId, reason: 'stop the active run' });
      expect(await sibling.cancelRequests(threadId)).toEqual([second, first, unnamed]);
      await eventually(() => seen.length >= 3, 5_000, 'the watcher to see all three requests');
      await sleep(100);
      expect(seen).toEqual([second, first, unnamed]);
      // A watch started now is told of every pending request (in any order), each once.
      const late: CancelRequest[] = [];
      const lateWatch = await sibling.watchCancel(threadId, (request) => late.push(request));
      await eventually(() => late.length >= 3, 5_000, 'a new watch to see the pending requests');
      await sleep(100);
      expect(late).toHaveLength(3);
      expect(late).toEqual(expect.arrayContaining([second, first, unnamed]));
      // Run 1 ends: clearing its request leaves run 2's (and the unnamed one).
      expect(await dispatcher.clearCancel(threadId, first.id)).toBe(true);
      expect(await dispatcher.clearCancel(threadId, first.id)).toBe(false);
      expect(await sibling.cancelRequests(threadId)).toEqual([second, unnamed]);
      expect(await sibling.clearCancel(threadId, unnamed.id)).toBe(true);
      expect(await dispatcher.cancelRequests(threadId)).toEqual([second]);
      expect(await dispatcher.clearCancel(threadId, second.id)).toBe(true);
      expect(await dispatcher.cancelRequests(threadId)).toEqual([]);
      // Without an id: every request of the thread, and only that thread's.
      const otherThread = uniqueId('thread');
      const other = await dispatcher.requestCancel({ threadId: otherThread, runId: 'run-9', reason: 'x' });
      await dispatcher.requestCancel({ threadId, runId: 'run-3', reason: 'a' });
      await dispatcher.requestCancel({ threadId, runId: 'run-4', reason: 'b' });
      expect(await sibling.clearCancel(threadId)).toBe(true);
      expect(await dispatcher.cancelRequests(threadId)).toEqual([]);
      expect(await dispatcher.cancelRequests(otherThread)).toEqual([other]);
      watch.close();
      lateWatch.close();
    });
  });
}
