import type { LunationError, UserMessage } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { Scheduler } from './scheduler.js';
import { SimulatedDispatcher } from './simulated-dispatcher.js';
import { SimulatedStore } from './simulated-store.js';

const message: UserMessage = { id: 'm1', role: 'user', content: [{ type: 'text', text: 'hi' }] };

/** Runs the scheduler until `promise` settles; resolves with its value or its error code. */
async function outcome<T>(scheduler: Scheduler, promise: Promise<T>): Promise<T | string> {
  const result = promise.then(
    (value) => value,
    (error: LunationError) => `error:${error.code}`,
  );
  await scheduler.run();
  return result;
}

describe('SimulatedStore faults', () => {
  it('a lost write changes nothing and answers store-unavailable', async () => {
    const scheduler = new Scheduler({ seed: 1 });
    const store = new SimulatedStore({ scheduler, faults: { lostWrite: 1 } });
    expect(await outcome(scheduler, store.createThread({ id: 't1' }))).toBe('error:store-unavailable');
    expect(await outcome(scheduler, store.getThread('t1'))).toBeUndefined();
    expect(store.faultCounts).toEqual({ 'lost-write': 1 });
  });

  it('an unacknowledged write applies, but the caller hears store-unavailable', async () => {
    const scheduler = new Scheduler({ seed: 1 });
    const store = new SimulatedStore({ scheduler, faults: { unacknowledgedWrite: 1 } });
    expect(await outcome(scheduler, store.createThread({ id: 't1' }))).toBe('error:store-unavailable');
    expect(await outcome(scheduler, store.getThread('t1'))).toEqual(expect.objectContaining({ id: 't1' }));
  });

  it('busy and conflict refusals write nothing', async () => {
    const scheduler = new Scheduler({ seed: 1 });
    const store = new SimulatedStore({ scheduler });
    await outcome(scheduler, store.createThread({ id: 't1' }));
    const busy = store.forProcess(scheduler.process('a'), { busy: 1 });
    const conflicted = store.forProcess(scheduler.process('b'), { conflict: 1 });
    const commit = { threadId: 't1', expectedMessageCount: 0, messages: [message] };
    expect(await outcome(scheduler, busy.commit(commit))).toBe('error:thread-busy');
    expect(await outcome(scheduler, conflicted.commit(commit))).toBe('error:store-conflict');
    expect(await outcome(scheduler, store.listMessages('t1'))).toEqual([]);
    expect(store.faultCounts).toEqual({ busy: 1, conflict: 1 });
  });

  it("stamps records and expires leases on the world's virtual clock", async () => {
    const scheduler = new Scheduler({ seed: 1, startTime: 5_000, maxLatencyMs: 0 });
    const store = new SimulatedStore({ scheduler });
    const lease = await outcome(
      scheduler,
      store.acquireLease({ threadId: 't1', owner: 'a', runId: 'r1', ttlMs: 100 }),
    );
    expect(lease).toEqual(expect.objectContaining({ renewedAt: 5_000, expiresAt: 5_100 }));
    scheduler.world.clock.setTimeout(() => undefined, 100);
    await scheduler.run();
    expect(await outcome(scheduler, store.getLease('t1'))).toBeUndefined();
  });

  it("a crashed process's calls never apply", async () => {
    const scheduler = new Scheduler({ seed: 1 });
    const store = new SimulatedStore({ scheduler });
    const process = scheduler.process('doomed');
    void store.forProcess(process).createThread({ id: 't1' });
    process.crash();
    await scheduler.run();
    expect(await outcome(scheduler, store.getThread('t1'))).toBeUndefined();
  });
});

describe('SimulatedDispatcher faults', () => {
  const submission = { id: 's1', threadId: 't1', request: { type: 'continue' as const, runId: 'r1' } };

  it('a duplicate delivery takes the claim from its holder within its lock and hands the thread to another', async () => {
    const scheduler = new Scheduler({ seed: 1 });
    const dispatcher = new SimulatedDispatcher({ scheduler });
    const faulty = dispatcher.forProcess(scheduler.process('a'), { duplicateDelivery: 1 });
    await outcome(scheduler, dispatcher.submit(submission));
    const first = await outcome(scheduler, faulty.claim({ workerId: 'a', lockMs: 10_000 }));
    expect(first).toEqual(expect.objectContaining({ threadId: 't1' }));
    const second = await outcome(
      scheduler,
      dispatcher.claim({ workerId: 'b', lockMs: 10_000, waitMs: 10_000 }),
    );
    expect(second).toEqual(expect.objectContaining({ threadId: 't1', workerId: 'b' }));
    const claimedAt = (claim: unknown) => (claim as { claimedAt: number }).claimedAt;
    expect(claimedAt(second)).toBeLessThan(claimedAt(first) + 10_000);
    expect(await outcome(scheduler, faulty.complete(first as never))).toBe('error:claim-lost');
    expect(dispatcher.faultCounts).toEqual({ 'duplicate-delivery': 1 });
  });

  it('a lost claim is held but never answered: the thread comes back when its lock runs out', async () => {
    const scheduler = new Scheduler({ seed: 1, startTime: 0 });
    const dispatcher = new SimulatedDispatcher({ scheduler });
    const faulty = dispatcher.forProcess(scheduler.process('a'), { lostClaim: 1 });
    await outcome(scheduler, dispatcher.submit(submission));
    expect(await outcome(scheduler, faulty.claim({ workerId: 'a', lockMs: 2_000 }))).toBeUndefined();
    const next = await outcome(scheduler, dispatcher.claim({ workerId: 'b', waitMs: 10_000 }));
    expect(next).toEqual(expect.objectContaining({ threadId: 't1', workerId: 'b', attempt: 1 }));
    expect(scheduler.now()).toBeGreaterThanOrEqual(2_000);
  });

  it('a lost acknowledgement leaves the submission pending', async () => {
    const scheduler = new Scheduler({ seed: 1 });
    const dispatcher = new SimulatedDispatcher({ scheduler });
    const faulty = dispatcher.forProcess(scheduler.process('a'), { lostAcknowledgement: 1 });
    await outcome(scheduler, dispatcher.submit(submission));
    expect(await outcome(scheduler, faulty.acknowledge('t1', ['s1']))).toBe('error:store-unavailable');
    expect(await outcome(scheduler, dispatcher.pending('t1'))).toEqual([
      expect.objectContaining({ id: 's1' }),
    ]);
  });

  it('a cancel request reaches each watching process as a message of its own; a crashed watcher hears nothing', async () => {
    const scheduler = new Scheduler({ seed: 1 });
    const dispatcher = new SimulatedDispatcher({ scheduler });
    const heard: string[] = [];
    const alive = scheduler.process('alive');
    const doomed = scheduler.process('doomed');
    await outcome(
      scheduler,
      dispatcher.forProcess(alive).watchCancel('t1', () => heard.push('alive')),
    );
    await outcome(
      scheduler,
      dispatcher.forProcess(doomed).watchCancel('t1', () => heard.push('doomed')),
    );
    const request = dispatcher.requestCancel({ threadId: 't1', reason: 'stop' });
    doomed.crash();
    await outcome(scheduler, request);
    expect(heard).toEqual(['alive']);
  });
});
