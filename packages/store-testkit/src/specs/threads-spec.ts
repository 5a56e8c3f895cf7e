import { type ThreadRecord, threadRecordSchema } from '@lunation/contract';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  expectLunationError,
  makeBeginToolExecutionInput,
  makeRunRecord,
  makeToolExecution,
  sleep,
  uniqueId,
} from '../fixtures.js';
import type { StoreSpecContext } from '../store-spec-context.js';
import {
  appendMessages,
  collectPages,
  createThread,
  expectSchema,
  expectTimestampBetween,
} from './spec-helpers.js';

function byCreationThenId(a: ThreadRecord, b: ThreadRecord): number {
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function ids(threads: ThreadRecord[]): string[] {
  return threads.map((thread) => thread.id);
}

/** createThread, getThread, listThreads, updateThreadMetadata, deleteThread. */
export function threadsSpec(context: StoreSpecContext): void {
  describe('threads', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('createThread returns a record with metadata {}, messageCount 0 and createdAt = updatedAt = now', async () => {
      const id = uniqueId('thread');
      const before = Date.now();
      const thread = await context.store.createThread({ id });
      const after = Date.now();
      expectSchema(threadRecordSchema, thread);
      expect(thread.id).toBe(id);
      expect(thread.resourceId).toBeUndefined();
      expect(thread.metadata).toEqual({});
      expect(thread.messageCount).toBe(0);
      expectTimestampBetween(thread.createdAt, before, after);
      expect(thread.updatedAt).toBe(thread.createdAt);
      expect(await context.store.getThread(id)).toEqual(thread);
    });

    it('createThread keeps resourceId and metadata', async () => {
      const id = uniqueId('thread');
      const metadata = { title: 'Trip to Lisbon', tags: ['travel', 'work'], pinned: true, priority: 2 };
      const thread = await context.store.createThread({ id, resourceId: 'user-1', metadata });
      expect(thread.resourceId).toBe('user-1');
      expect(thread.metadata).toEqual(metadata);
      const loaded = await context.store.getThread(id);
      expect(loaded?.resourceId).toBe('user-1');
      expect(loaded?.metadata).toEqual(metadata);
    });

    it('createThread with an existing id fails with store-conflict and leaves the thread as it was', async () => {
      const original = await context.store.createThread({ id: uniqueId('thread'), metadata: { v: 1 } });
      await appendMessages(context.store, original.id, 2);
      const stored = await context.store.getThread(original.id);
      await expectLunationError(
        context.store.createThread({ id: original.id, resourceId: 'other', metadata: { v: 2 } }),
        'store-conflict',
      );
      expect(await context.store.getThread(original.id)).toEqual(stored);
      expect(stored?.messageCount).toBe(2);
      expect(await context.store.listMessages(original.id)).toHaveLength(2);
    });

    it('getThread returns undefined for an unknown id', async () => {
      expect(await context.store.getThread(uniqueId('missing'))).toBeUndefined();
    });

    it('listThreads returns every thread ordered by createdAt, then id', async () => {
      const created: ThreadRecord[] = [];
      for (const label of ['delta', 'alpha', 'charlie', 'bravo', 'echo']) {
        created.push(await context.store.createThread({ id: uniqueId(label) }));
      }
      const page = await context.store.listThreads();
      expect(page.nextCursor).toBeUndefined();
      expect(page.items).toHaveLength(5);
      expect(ids(page.items)).toEqual(ids([...created].sort(byCreationThenId)));
      expect(page.items).toEqual([...created].sort(byCreationThenId));
    });

    it('listThreads orders threads sharing a createdAt by id (Date pinned with vi.useFakeTimers)', async () => {
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
      const base = uniqueId('tie');
      for (const suffix of ['c', 'a', 'e', 'b', 'd'])
        await context.store.createThread({ id: `${base}-${suffix}` });
      vi.useRealTimers();
      const { items } = await context.store.listThreads();
      expect(ids(items)).toEqual(ids([...items].sort(byCreationThenId)));
      if (new Set(items.map((thread) => thread.createdAt)).size === 1) {
        expect(ids(items)).toEqual(['a', 'b', 'c', 'd', 'e'].map((suffix) => `${base}-${suffix}`));
      }
    });

    it('listThreads filters by resourceId', async () => {
      const first = [];
      const second = [];
      for (let index = 0; index < 3; index += 1)
        first.push(await createThread(context.store, { resourceId: 'r1' }));
      for (let index = 0; index < 2; index += 1)
        second.push(await createThread(context.store, { resourceId: 'r2' }));
      const unowned = await createThread(context.store);

      const listFirst = await context.store.listThreads({ resourceId: 'r1' });
      expect(ids(listFirst.items)).toEqual(ids(first.sort(byCreationThenId)));
      expect(listFirst.nextCursor).toBeUndefined();
      const listSecond = await context.store.listThreads({ resourceId: 'r2' });
      expect(ids(listSecond.items)).toEqual(ids(second.sort(byCreationThenId)));
      expect(await context.store.listThreads({ resourceId: 'nobody' })).toEqual({ items: [] });
      const all = await context.store.listThreads();
      expect(all.items).toHaveLength(6);
      expect(ids(all.items)).toContain(unowned.id);
    });

    it('listThreads pages with limit and cursor, without duplicates or gaps, even when createdAt ties', async () => {
      const created: ThreadRecord[] = [];
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
      for (const suffix of ['d', 'b', 'a', 'c'])
        created.push(await context.store.createThread({ id: uniqueId(suffix) }));
      vi.useRealTimers();
      await sleep(2);
      for (let index = 0; index < 3; index += 1) created.push(await createThread(context.store));

      const pages = await collectPages((cursor) => context.store.listThreads({ limit: 3, cursor }));
      expect(pages.map((page) => page.length)).toEqual([3, 3, 1]);
      const flat = pages.flat();
      expect(new Set(ids(flat)).size).toBe(7);
      expect(ids(flat)).toEqual(ids([...created].sort(byCreationThenId)));

      const unpaged = await context.store.listThreads({ limit: 100 });
      expect(flat).toEqual(unpaged.items);
    });

    it('listThreads pages within a resourceId filter', async () => {
      const owned: ThreadRecord[] = [];
      for (let index = 0; index < 5; index += 1) {
        owned.push(await createThread(context.store, { resourceId: 'owner' }));
        await createThread(context.store, { resourceId: 'someone-else' });
      }
      const pages = await collectPages((cursor) =>
        context.store.listThreads({ resourceId: 'owner', limit: 2, cursor }),
      );
      expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
      expect(ids(pages.flat())).toEqual(ids(owned.sort(byCreationThenId)));
      for (const thread of pages.flat()) expect(thread.resourceId).toBe('owner');
    });

    it('listThreads omits nextCursor on a last page that is exactly full', async () => {
      for (let index = 0; index < 4; index += 1) await createThread(context.store);
      const first = await context.store.listThreads({ limit: 2 });
      expect(first.items).toHaveLength(2);
      expect(first.nextCursor).toEqual(expect.any(String));
      const second = await context.store.listThreads({ limit: 2, cursor: first.nextCursor });
      expect(second.items).toHaveLength(2);
      expect(second.nextCursor).toBeUndefined();
      expect(new Set(ids([...first.items, ...second.items])).size).toBe(4);
      const exact = await context.store.listThreads({ limit: 4 });
      expect(exact.items).toHaveLength(4);
      expect(exact.nextCursor).toBeUndefined();
    });

    it('listThreads returns 50 threads per page by default', async () => {
      const created: ThreadRecord[] = [];
      for (let index = 0; index < 51; index += 1) created.push(await createThread(context.store));
      const first = await context.store.listThreads();
      expect(first.items).toHaveLength(50);
      expect(first.nextCursor).toEqual(expect.any(String));
      const second = await context.store.listThreads({ cursor: first.nextCursor });
      expect(second.items).toHaveLength(1);
      expect(second.nextCursor).toBeUndefined();
      expect(ids([...first.items, ...second.items])).toEqual(ids(created.sort(byCreationThenId)));
    });

    it('a listThreads cursor stays valid when threads are deleted or created between pages', async () => {
      const created: ThreadRecord[] = [];
      for (let index = 0; index < 6; index += 1) created.push(await createThread(context.store));
      const sorted = [...created].sort(byCreationThenId);
      const first = await context.store.listThreads({ limit: 3 });
      expect(ids(first.items)).toEqual(ids(sorted.slice(0, 3)));

      expect(await context.store.deleteThread(sorted[0]!.id)).toBe(true);
      expect(await context.store.deleteThread(sorted[4]!.id)).toBe(true);
      await sleep(2);
      const late = await createThread(context.store);

      const rest = await collectPages((cursor) =>
        context.store.listThreads({ limit: 3, cursor: cursor ?? first.nextCursor }),
      );
      expect(ids(rest.flat())).toEqual([sorted[3]!.id, sorted[5]!.id, late.id]);
    });

    it('updateThreadMetadata replaces the metadata whole and keeps everything else', async () => {
      const thread = await context.store.createThread({
        id: uniqueId('thread'),
        resourceId: 'user-1',
        metadata: { title: 'Draft', nested: { keep: false } },
      });
      await appendMessages(context.store, thread.id, 1);
      const before = await context.store.getThread(thread.id);
      await sleep(3);
      const updated = await context.store.updateThreadMetadata(thread.id, { summary: 'done' });
      expect(updated.metadata).toEqual({ summary: 'done' });
      expect(updated.id).toBe(thread.id);
      expect(updated.resourceId).toBe('user-1');
      expect(updated.messageCount).toBe(1);
      expect(updated.createdAt).toBe(thread.createdAt);
      expect(updated.updatedAt).toBeGreaterThan(before!.updatedAt);
      expect(await context.store.getThread(thread.id)).toEqual(updated);
      const cleared = await context.store.updateThreadMetadata(thread.id, {});
      expect(cleared.metadata).toEqual({});
      expect((await context.store.getThread(thread.id))?.metadata).toEqual({});
    });

    it('updateThreadMetadata fails with not-found for an unknown thread and creates nothing', async () => {
      const id = uniqueId('missing');
      await expectLunationError(context.store.updateThreadMetadata(id, { a: 1 }), 'not-found');
      expect(await context.store.getThread(id)).toBeUndefined();
    });

    it('deleteThread removes the thread with its messages, runs, state, ledger entries and lease', async () => {
      const thread = await createThread(context.store, { resourceId: 'owner' });
      const run = makeRunRecord({ threadId: thread.id });
      const runId = run.identity.runId;
      const committed = makeToolExecution({ threadId: thread.id, runId });
      await appendMessages(context.store, thread.id, 3, { run, threadState: { mood: 'happy' } });
      await context.store.commit({
        threadId: thread.id,
        expectedMessageCount: 3,
        messages: [],
        toolExecutions: [committed],
      });
      const begun = await context.store.beginToolExecution(
        makeBeginToolExecutionInput({ threadId: thread.id, runId }),
      );
      await context.store.acquireLease({ threadId: thread.id, owner: 'worker-1', runId, ttlMs: 60_000 });
      const other = await createThread(context.store, { resourceId: 'owner' });
      await appendMessages(context.store, other.id, 1);

      expect(await context.store.deleteThread(thread.id)).toBe(true);

      expect(await context.store.getThread(thread.id)).toBeUndefined();
      expect(await context.store.loadCheckpoint(thread.id)).toBeUndefined();
      expect(await context.store.listMessages(thread.id)).toEqual([]);
      expect(await context.store.getRun(runId)).toBeUndefined();
      expect(await context.store.getLatestRun(thread.id)).toBeUndefined();
      expect((await context.store.listRuns(thread.id)).items).toEqual([]);
      expect(await context.store.getThreadState(thread.id)).toEqual({});
      expect(await context.store.getToolExecution(runId, committed.toolCallId)).toBeUndefined();
      expect(await context.store.getToolExecution(runId, begun.toolCallId)).toBeUndefined();
      expect(await context.store.listToolExecutions(runId)).toEqual([]);
      expect(await context.store.getLease(thread.id)).toBeUndefined();
      expect(ids((await context.store.listThreads({ resourceId: 'owner' })).items)).toEqual([other.id]);
      expect((await context.store.getThread(other.id))?.messageCount).toBe(1);
      expect(await context.store.listMessages(other.id)).toHaveLength(1);
    });

    it('deleteThread returns false for an unknown or already deleted thread', async () => {
      expect(await context.store.deleteThread(uniqueId('missing'))).toBe(false);
      const thread = await createThread(context.store);
      expect(await context.store.deleteThread(thread.id)).toBe(true);
      expect(await context.store.deleteThread(thread.id)).toBe(false);
    });

    it('a deleted thread id can be created again, fresh', async () => {
      const id = uniqueId('thread');
      await context.store.createThread({ id, resourceId: 'old', metadata: { generation: 1 } });
      const run = makeRunRecord({ threadId: id });
      await appendMessages(context.store, id, 2, { run, threadState: { generation: 1 } });
      expect(await context.store.deleteThread(id)).toBe(true);

      const fresh = await context.store.createThread({ id });
      expect(fresh.messageCount).toBe(0);
      expect(fresh.metadata).toEqual({});
      expect(fresh.resourceId).toBeUndefined();
      expect(await context.store.listMessages(id)).toEqual([]);
      expect(await context.store.getThreadState(id)).toEqual({});
      expect(await context.store.getLatestRun(id)).toBeUndefined();
      await expectLunationError(
        context.store.commit({ threadId: id, expectedMessageCount: 2, messages: [] }),
        'store-conflict',
      );
      const [message] = await appendMessages(context.store, id, 1);
      const records = await context.store.listMessages(id);
      expect(records.map((record) => record.seq)).toEqual([1]);
      expect(records[0]?.message).toEqual(message);
      expect(records[0]?.runId).toBeUndefined();
    });
  });
}
