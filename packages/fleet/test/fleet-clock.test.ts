import { type AgentEvent, LunationError, type RunEventLog } from '@lunation/contract';
import { createRuntime } from '@lunation/runtime';
import { ScriptedModel } from '@lunation/runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../store-memory/src/index.js';
import { EventPipe } from '../src/event-pipe.js';
import { AgentWorker, FleetClient, LocalDispatcher } from '../src/index.js';
import { countingIds, ManualClock } from './__fixtures__/manual-clock.js';

/**
 * The fleet reads time, sets timers and makes ids only through the `Clock` and `IdSource` it is given: a manual
 * clock that never moves stops every timer, however much real time passes.
 */

const realPause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const open: Array<{ close(): Promise<void> }> = [];

afterEach(async () => {
  for (const dispatcher of open.splice(0)) await dispatcher.close();
});

function localDispatcher(clock: ManualClock, prefix = 'x'): LocalDispatcher {
  const dispatcher = new LocalDispatcher({ clock, ids: countingIds(prefix) });
  open.push(dispatcher);
  return dispatcher;
}

function runtimeOn(store: MemoryStore) {
  return createRuntime()
    .model('m', new ScriptedModel([{ text: 'done' }]))
    .agent({ id: 'a', model: 'm' })
    .store(store)
    .build();
}

describe('LocalDispatcher on an injected clock and id source', () => {
  it('stamps submissions, claims and cancel requests with its clock, and names them from its ids', async () => {
    const clock = new ManualClock(5_000);
    const dispatcher = localDispatcher(clock);
    await dispatcher.submit({ id: 's1', threadId: 't1', request: { type: 'continue', runId: 'r1' } });
    expect((await dispatcher.pending('t1'))[0]?.submittedAt).toBe(5_000);
    clock.advance(7);
    expect(await dispatcher.claim({ workerId: 'w1' })).toMatchObject({ token: 'x-1', claimedAt: 5_007 });
    expect(await dispatcher.requestCancel({ threadId: 't1', reason: 'stop' })).toMatchObject({
      id: 'x-2',
      requestedAt: 5_007,
    });
  });

  it('keeps a lock until its clock says it ran out, however long the host waits', async () => {
    const clock = new ManualClock();
    const dispatcher = localDispatcher(clock);
    await dispatcher.submit({ id: 's1', threadId: 't1', request: { type: 'continue', runId: 'r1' } });
    const claim = await dispatcher.claim({ workerId: 'w1', lockMs: 20 });
    if (claim === undefined) throw new Error('no claim');
    await realPause(60);
    await expect(dispatcher.extend(claim, 20)).resolves.toBeUndefined();
    clock.advance(20);
    await expect(dispatcher.extend(claim)).rejects.toMatchObject({ code: 'claim-lost' });
  });

  it('ends a claim wait, and serves a waiting claim a delayed thread, when its clock gets there', async () => {
    const clock = new ManualClock();
    const dispatcher = localDispatcher(clock);
    let answered: unknown = 'waiting';
    void dispatcher.claim({ workerId: 'w1', waitMs: 30 }).then((claim) => {
      answered = claim;
    });
    await realPause(80);
    expect(answered).toBe('waiting');
    clock.advance(30);
    await realPause(1);
    expect(answered).toBeUndefined();

    await dispatcher.submit({ id: 's1', threadId: 't1', request: { type: 'continue', runId: 'r1' } });
    const claim = await dispatcher.claim({ workerId: 'w1' });
    if (claim === undefined) throw new Error('no claim');
    await dispatcher.handBack(claim, { delayMs: 50 });
    const waiting = dispatcher.claim({ workerId: 'w2', waitMs: 10_000 });
    await realPause(80);
    clock.advance(51);
    await expect(waiting).resolves.toMatchObject({ threadId: 't1', workerId: 'w2', token: 'x-2' });
  });

  it('forgets an ended event log when its clock passes the log time to live', async () => {
    const clock = new ManualClock();
    const dispatcher = localDispatcher(clock);
    await dispatcher.endEvents('r1', { ttlMs: 10 });
    await realPause(40);
    expect(await dispatcher.readEvents('r1')).toEqual({ events: [], ended: true });
    clock.advance(10);
    expect(await dispatcher.readEvents('r1')).toEqual({ events: [], ended: false });
  });
});

describe('AgentWorker on an injected clock', () => {
  it('pauses after a failed claim, and starts its stranded-run scans, on its clock', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore();
    let scans = 0;
    const listThreads = store.listThreads.bind(store);
    store.listThreads = (options) => {
      scans++;
      return listThreads(options);
    };
    const dispatcher = localDispatcher(clock);
    let claims = 0;
    dispatcher.claim = async () => {
      claims++;
      throw new LunationError('store-unavailable', 'the dispatcher is down');
    };
    const worker = new AgentWorker({
      runtime: runtimeOn(store),
      dispatcher,
      concurrency: 1,
      idleWaitMs: 25,
      strandedScanIntervalMs: 60_000,
      clock,
    }).start();
    await realPause(80);
    expect({ claims, scans }).toEqual({ claims: 1, scans: 0 });
    clock.advance(25);
    await realPause(5);
    expect({ claims, scans }).toEqual({ claims: 2, scans: 1 });
    await worker.stop({ deadlineMs: 1_000 });
  });
});

describe('a claim extended before a submission, its answer late', () => {
  // Seeds 88 and 103 of the simulator's `stalls` profile: a worker paused as its extension's answer came, resumed
  // after its claim ran out and another worker had run the thread and the user deleted it, and applied the stale
  // submission again (the thread came back).
  it('applies nothing when the answer came after the lock ran out on its clock', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore();
    const dispatcher = localDispatcher(clock);
    const extend = dispatcher.extend.bind(dispatcher);
    let extensions = 0;
    dispatcher.extend = async (claim, lockMs) => {
      await extend(claim, lockMs);
      // The process stood still as the first answer came: its clock moved on by the whole lock.
      if (extensions++ === 0) clock.advance(lockMs ?? 0);
    };
    const worker = new AgentWorker({
      runtime: runtimeOn(store),
      dispatcher,
      concurrency: 1,
      claimLockMs: 1_000,
      idleWaitMs: 25,
      clock,
    }).start();
    const client = new FleetClient({ dispatcher, store });
    const { runId } = await client.send({ threadId: 't1', input: 'hello' });
    await realPause(150);
    expect(extensions).toBeGreaterThan(0);
    expect(await store.getRun(runId)).toBeUndefined();
    await worker.stop({ deadlineMs: 1_000 });
  });
});

describe('FleetClient on an injected id source', () => {
  it('names the run and the submission of a send from its ids', async () => {
    const store = new MemoryStore();
    const client = new FleetClient({
      dispatcher: localDispatcher(new ManualClock()),
      store,
      ids: countingIds('c'),
    });
    expect(await client.send({ threadId: 't1', input: 'hello' })).toEqual({
      runId: 'c-1',
      submissionId: 'c-2',
    });
  });
});

describe('EventPipe on an injected clock', () => {
  it('backs off a failed append on its clock', async () => {
    const clock = new ManualClock();
    let appends = 0;
    const log = {
      appendEvents: async () => {
        if (++appends === 1) throw new LunationError('store-unavailable', 'the log is down');
        return ['1'];
      },
    } as unknown as RunEventLog;
    const pipe = new EventPipe(log, 'r1', { clock });
    pipe.push({ type: 'step-start', step: 0 } as unknown as AgentEvent);
    await realPause(80);
    expect(appends).toBe(1);
    clock.advance(50);
    await expect(pipe.flush()).resolves.toBe('appended');
    expect(appends).toBe(2);
  });
});
