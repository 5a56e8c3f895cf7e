import { LunationError, type LunationStore } from '@lunation/contract';
import { createRuntime } from '@lunation/runtime';
import { reply, ScriptedModel } from '@lunation/runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../store-memory/src/index.js';
import {
  AgentWorker,
  FleetClient,
  LocalDispatchBackend,
  LocalDispatcher,
  type WorkerLogEntry,
} from '../src/index.js';
import { until } from './__fixtures__/until.js';

// A store outage is the infrastructure's failure, not the submission's: a claim that fails with a retryable error
// is handed back without counting toward `maxAttempts`, so an outage longer than the attempts allow does not
// dead-letter healthy threads (the simulator found threads dead-lettered after 5 `store-unavailable` attempts).

const workers: AgentWorker[] = [];
const dispatchers: LocalDispatcher[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ deadlineMs: 2_000 })));
  await Promise.all(dispatchers.splice(0).map((dispatcher) => dispatcher.close()));
});

/** The store as the worker sees it: while `down`, every call fails with a retryable `store-unavailable`. */
function outage(store: MemoryStore) {
  const state = { down: false, refused: 0 };
  const seen = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (state.down) {
          state.refused++;
          return Promise.reject(new LunationError('store-unavailable', 'the database is restarting'));
        }
        return value.apply(target, args);
      };
    },
  });
  return { state, store: seen as LunationStore };
}

describe('a store unavailable for longer than the attempts allow', () => {
  it('does not dead-letter the thread: its claims are handed back uncounted, and the run completes once the store is back', async () => {
    const store = new MemoryStore();
    const { state, store: workerStore } = outage(store);
    const backend = new LocalDispatchBackend();
    const policy = { backend, maxAttempts: 2, backoff: { initialMs: 10, maxMs: 20 } };
    const admin = new LocalDispatcher(policy);
    const own = new LocalDispatcher(policy);
    dispatchers.push(admin, own);
    const log: WorkerLogEntry[] = [];
    const runtime = createRuntime()
      .model('m', new ScriptedModel(() => reply('back again')))
      .agent({ id: 'a', model: 'm' })
      .store(workerStore)
      .options({ leaseTtlMs: 2_000 })
      .build();
    const worker = new AgentWorker({
      runtime,
      dispatcher: own,
      workerId: 'worker-0',
      idleWaitMs: 50,
      retryBackoff: { initialMs: 10, factor: 2, maxMs: 80 },
      log: (entry) => log.push(entry),
    });
    workers.push(worker);
    const client = new FleetClient({ dispatcher: admin, store });

    state.down = true;
    const { runId } = await client.send({ threadId: 'o1', input: 'hello' });
    worker.start();
    const failures = () => log.filter((entry) => entry.event === 'claim-failed').length;
    // Three times the attempts the dispatcher allows, each failing on the store.
    await until(() => failures() >= 6, 10_000);
    expect(state.refused).toBeGreaterThanOrEqual(6);
    expect(await admin.deadLetters()).toEqual([]);

    state.down = false;
    await until(() => log.some((entry) => entry.event === 'claim-completed'), 10_000);
    expect((await store.getRun(runId))?.status).toBe('done');
    expect(await admin.deadLetters()).toEqual([]);
    expect((await admin.depth()).deadLettered).toBe(0);
    // Uncounted: every claim of the thread was its first attempt, and each hand-back waited longer, up to the cap.
    const claims = log.filter((entry) => entry.event === 'claim-taken');
    expect(new Set(claims.map((entry) => entry.attempt))).toEqual(new Set([1]));
    const delays = log.flatMap((entry) => (entry.event === 'claim-failed' ? [entry.delayMs ?? -1] : []));
    expect(delays.slice(0, 4).every((delay, index) => delay >= 5 * 2 ** index)).toBe(true);
    expect(Math.max(...delays)).toBeLessThanOrEqual(80);
    expect(log.some((entry) => entry.event === 'claim-dead-lettered')).toBe(false);
  }, 30_000);
});
