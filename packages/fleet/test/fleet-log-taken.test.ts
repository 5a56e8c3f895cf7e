import { LunationError } from '@lunation/contract';
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

// The simulator's seed 1801 (`stalls`): a worker ran a thread's run to its end, released the lease and appended the
// run's events; before it marked the log ended, a stalled worker that had taken the thread's lease next claimed the
// run's log under its newer fence (to repair it). The first worker's `endEvents` was refused with `stale-lease`,
// and the worker failed its claim with it, not retryable: the healthy thread was dead-lettered. A log that a newer
// lease holder took is that holder's to end; it is not the submission's failure.

const workers: AgentWorker[] = [];
const dispatchers: LocalDispatcher[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ deadlineMs: 2_000 })));
  await Promise.all(dispatchers.splice(0).map((dispatcher) => dispatcher.close()));
});

describe("a run's log taken by a newer lease holder before the run's holder ends it", () => {
  it('does not fail the claim: the thread is not dead-lettered and its next message runs', async () => {
    const store = new MemoryStore();
    const backend = new LocalDispatchBackend();
    const policy = { backend, maxAttempts: 1 };
    const admin = new LocalDispatcher(policy);
    const own = new LocalDispatcher(policy);
    dispatchers.push(admin, own);
    const refused: unknown[] = [];
    let taken = false;
    // The worker's dispatcher: just before its first `endEvents`, the newer holder claims the run's log (an append
    // of no events under a higher fence, as `claimLog` does); the real dispatcher then refuses the end.
    const seen = new Proxy(own, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        if (property !== 'endEvents') return value.bind(target);
        return async (runId: string, options: { ttlMs?: number; fence?: number }) => {
          if (!taken && options.fence !== undefined) {
            taken = true;
            await admin.appendEvents(runId, [], { fence: options.fence + 1 });
          }
          return value.call(target, runId, options).catch((error: unknown) => {
            refused.push(error);
            throw error;
          });
        };
      },
    });
    const log: WorkerLogEntry[] = [];
    const runtime = createRuntime()
      .model('m', new ScriptedModel(() => reply('done')))
      .agent({ id: 'a', model: 'm' })
      .store(store)
      .options({ leaseTtlMs: 2_000 })
      .build();
    const worker = new AgentWorker({
      runtime,
      dispatcher: seen,
      workerId: 'worker-0',
      idleWaitMs: 50,
      log: (entry) => log.push(entry),
    });
    workers.push(worker);
    const client = new FleetClient({ dispatcher: admin, store });

    const first = await client.send({ threadId: 'l1', input: 'hello' });
    worker.start();
    await until(() => log.some((entry) => entry.event === 'claim-completed'), 10_000);
    expect(taken).toBe(true);
    expect(refused).toHaveLength(1);
    expect(LunationError.hasCode(refused[0], 'stale-lease')).toBe(true);
    expect((await store.getRun(first.runId))?.status).toBe('done');
    expect(await admin.deadLetters()).toEqual([]);
    expect(log.some((entry) => entry.event === 'claim-dead-lettered')).toBe(false);

    // The log has every event of the run but no end mark: the holder that claimed it ends it when it repairs it,
    // here the next claim of the thread (its recovery looks at the latest run first).
    expect((await admin.readEvents(first.runId)).ended).toBe(false);
    const second = await client.send({ threadId: 'l1', input: 'again' });
    await until(() => log.filter((entry) => entry.event === 'claim-completed').length >= 2, 10_000);
    expect((await store.getRun(second.runId))?.status).toBe('done');
    expect(await admin.deadLetters()).toEqual([]);
    const firstLog = await admin.readEvents(first.runId);
    expect(firstLog.ended).toBe(true);
    expect(firstLog.events.filter(({ event }) => event.type === 'run-end')).toHaveLength(1);
  }, 30_000);
});
