import { type JsonObject, systemClock } from '@lunation/contract';
import {
  expectLunationError,
  makeBeginToolExecutionInput,
  makeRunRecord,
  makeToolResult,
  makeUserMessage,
  runStoreConformance,
} from '@lunation/store-testkit';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from './memory-store.js';

runStoreConformance({
  name: 'memory',
  create: async () => new MemoryStore(),
  createSibling: async (store) => new MemoryStore({ backend: (store as MemoryStore).backend }),
});

describe('MemoryStore', () => {
  function clockedStore(start = 1_000) {
    const clock = { now: start };
    return { clock, store: new MemoryStore({ now: () => clock.now }) };
  }

  it('stamps records and judges leases by an injected Clock', async () => {
    let now = 5_000;
    const store = new MemoryStore({ clock: { ...systemClock, now: () => now } });
    expect(await store.createThread({ id: 't1' })).toMatchObject({ createdAt: 5_000, updatedAt: 5_000 });
    const lease = await store.acquireLease({ threadId: 't1', owner: 'a', runId: 'r1', ttlMs: 100 });
    expect(lease.expiresAt).toBe(5_100);
    now = 5_100;
    expect(await store.getLease('t1')).toBeUndefined();
  });

  it('reports kind "memory"', () => {
    expect(new MemoryStore().kind).toBe('memory');
  });

  it('stamps records with the injected clock', async () => {
    const { clock, store } = clockedStore();
    const thread = await store.createThread({ id: 't1' });
    expect([thread.createdAt, thread.updatedAt]).toEqual([1_000, 1_000]);
    clock.now = 2_000;
    await store.commit({ threadId: 't1', expectedMessageCount: 0, messages: [makeUserMessage()] });
    expect((await store.getThread('t1'))?.updatedAt).toBe(2_000);
    expect((await store.listMessages('t1'))[0]?.createdAt).toBe(2_000);
    clock.now = 3_000;
    const entry = await store.beginToolExecution(
      makeBeginToolExecutionInput({ threadId: 't1', runId: 'r1' }),
    );
    expect(entry.startedAt).toBe(3_000);
    clock.now = 3_500;
    const done = await store.completeToolExecution({
      runId: 'r1',
      toolCallId: entry.toolCallId,
      result: makeToolResult(),
    });
    expect(done.completedAt).toBe(3_500);
  });

  it('expires leases by the injected clock: renewedAt = now, expiresAt = now + ttl, gone at expiresAt', async () => {
    const { clock, store } = clockedStore();
    const lease = await store.acquireLease({ threadId: 't1', owner: 'a', runId: 'r1', ttlMs: 100 });
    expect(lease.expiresAt).toBe(1_100);
    clock.now = 1_099;
    expect(await store.getLease('t1')).toEqual(lease);
    await expectLunationError(
      store.acquireLease({ threadId: 't1', owner: 'b', runId: 'r2', ttlMs: 100 }),
      'thread-busy',
    );
    clock.now = 1_100;
    expect(await store.getLease('t1')).toBeUndefined();
    const next = await store.acquireLease({ threadId: 't1', owner: 'b', runId: 'r2', ttlMs: 100 });
    expect(next).toEqual({
      threadId: 't1',
      owner: 'b',
      runId: 'r2',
      token: lease.token + 1,
      renewedAt: 1_100,
      expiresAt: 1_200,
    });
  });

  it('takes a lease of the same owner over by the injected clock once it went three quarters of its ttl unrenewed', async () => {
    const { clock, store } = clockedStore();
    const held = { threadId: 't1', owner: 'a', incarnation: 'old', runId: 'r1', ttlMs: 1_000 };
    const lease = await store.acquireLease(held);
    const takeOver = { ...held, incarnation: 'new', runId: 'r2' };
    clock.now = 1_400;
    await store.renewLease({ threadId: 't1', token: lease.token, ttlMs: 1_000 });
    clock.now = 1_900; // half its ttl: store specification v1 took it over here
    await expectLunationError(store.acquireLease(takeOver), 'thread-busy');
    clock.now = 2_149;
    await expectLunationError(store.acquireLease(takeOver), 'thread-busy');
    clock.now = 2_150;
    expect(await store.acquireLease(takeOver)).toEqual({
      threadId: 't1',
      owner: 'a',
      incarnation: 'new',
      runId: 'r2',
      token: lease.token + 1,
      renewedAt: 2_150,
      expiresAt: 3_150,
    });
  });

  it('shares data only between stores built on the same backend', async () => {
    const backend = MemoryStore.createBackend();
    const first = new MemoryStore({ backend });
    const second = new MemoryStore({ backend });
    const separate = new MemoryStore();
    await first.createThread({ id: 't1' });
    expect((await second.getThread('t1'))?.id).toBe('t1');
    expect(await separate.getThread('t1')).toBeUndefined();
    expect(second.backend).toBe(backend);
  });

  it('fails with store-unavailable after close, while a sibling on the same backend keeps working', async () => {
    const store = new MemoryStore();
    const sibling = new MemoryStore({ backend: store.backend });
    await store.createThread({ id: 't1' });
    await store.close();
    await expectLunationError(store.getThread('t1'), 'store-unavailable');
    await expectLunationError(store.createThread({ id: 't2' }), 'store-unavailable');
    expect((await sibling.getThread('t1'))?.id).toBe('t1');
  });

  it('rejects malformed cursors, limits and TTLs with invalid-argument', async () => {
    const store = new MemoryStore();
    await store.createThread({ id: 't1' });
    await store.createThread({ id: 't2' });
    await expectLunationError(store.listThreads({ cursor: 'not a cursor' }), 'invalid-argument');
    const page = await store.listThreads({ limit: 1 });
    expect(page.nextCursor).toEqual(expect.any(String));
    await expectLunationError(store.listRuns('t1', { cursor: page.nextCursor }), 'invalid-argument');
    await expectLunationError(store.listThreads({ limit: 0 }), 'invalid-argument');
    await expectLunationError(store.listRuns('t1', { limit: 1.5 }), 'invalid-argument');
    await expectLunationError(store.listMessages('t1', { limit: -1 }), 'invalid-argument');
    await expectLunationError(
      store.acquireLease({ threadId: 't1', owner: 'a', runId: 'r', ttlMs: 0 }),
      'invalid-argument',
    );
    expect(await store.getLease('t1')).toBeUndefined();
  });

  it('writes nothing when part of a commit cannot be stored as JSON', async () => {
    const store = new MemoryStore();
    const thread = await store.createThread({ id: 't1' });
    const run = makeRunRecord({ threadId: 't1' });
    const threadState = { count: BigInt(1) } as unknown as JsonObject;
    await expectLunationError(
      store.commit({
        threadId: 't1',
        expectedMessageCount: 0,
        messages: [makeUserMessage()],
        run,
        threadState,
      }),
      'invalid-argument',
    );
    expect(await store.getThread('t1')).toEqual(thread);
    expect(await store.listMessages('t1')).toEqual([]);
    expect(await store.getRun(run.identity.runId)).toBeUndefined();
  });

  it('keeps the first result when a tool execution is completed twice', async () => {
    const store = new MemoryStore();
    const input = makeBeginToolExecutionInput({ threadId: 't1', runId: 'r1', toolCallId: 'c1' });
    await store.beginToolExecution(input);
    await store.completeToolExecution({ runId: 'r1', toolCallId: 'c1', result: makeToolResult('first') });
    const again = await store.completeToolExecution({
      runId: 'r1',
      toolCallId: 'c1',
      result: makeToolResult('second'),
    });
    expect(again.result).toEqual(makeToolResult('first'));
    expect((await store.getToolExecution('r1', 'c1'))?.result).toEqual(makeToolResult('first'));
  });

  it('moves a run to its new place when a commit changes its createdAt', async () => {
    const store = new MemoryStore();
    await store.createThread({ id: 't1' });
    const early = makeRunRecord({ threadId: 't1', runId: 'early' }, { createdAt: 10, updatedAt: 10 });
    const late = makeRunRecord({ threadId: 't1', runId: 'late' }, { createdAt: 20, updatedAt: 20 });
    for (const run of [early, late])
      await store.commit({ threadId: 't1', expectedMessageCount: 0, messages: [], run });
    await store.commit({
      threadId: 't1',
      expectedMessageCount: 0,
      messages: [],
      run: { ...early, createdAt: 30 },
    });
    expect((await store.listRuns('t1')).items.map((run) => run.identity.runId)).toEqual(['late', 'early']);
    expect((await store.getLatestRun('t1'))?.identity.runId).toBe('early');
  });

  it('keeps every step of a long thread: 2,000 single-message commits', async () => {
    const store = new MemoryStore();
    await store.createThread({ id: 't1' });
    const run = makeRunRecord({ threadId: 't1' });
    for (let step = 0; step < 2_000; step += 1) {
      await store.commit({
        threadId: 't1',
        expectedMessageCount: step,
        messages: [makeUserMessage(`step ${step}`)],
        run: { ...run, steps: step + 1 },
        threadState: { step },
      });
    }
    const checkpoint = await store.loadCheckpoint('t1');
    expect(checkpoint?.thread.messageCount).toBe(2_000);
    expect(checkpoint?.messages.map((record) => record.seq)).toEqual(
      Array.from({ length: 2_000 }, (_, i) => i + 1),
    );
    expect(checkpoint?.latestRun?.steps).toBe(2_000);
    expect(checkpoint?.threadState).toEqual({ step: 1_999 });
    expect(
      (await store.listMessages('t1', { fromSeq: 1_000, limit: 2 })).map((record) => record.seq),
    ).toEqual([1_000, 1_001]);
  });
});
