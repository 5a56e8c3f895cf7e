import { AgentWorker } from '@lunation/fleet';
import { createRuntime, permissionPlugin } from '@lunation/runtime';
import type { SimulatedProcess } from './scheduler.js';
import type { WorldContext } from './world-context.js';
import { WorldModel } from './world-model.js';
import { worldPermissionRules, worldTools } from './world-tools.js';

/** The thread lease and claim lock of the world's workers: renewed on the process's virtual clock. */
export const leaseTtlMs = 30_000;
export const claimLockMs = 30_000;

/**
 * One worker process of the runtime world: an `AgentWorker` (`concurrency: 1`) whose runtime runs on the process's
 * virtual clock (lease renewals and freshness, tool timeouts, retry waits) with seeded ids, and has the world's
 * tools and model (`WorldModel`: each answer an operation of the process). Its leases are held under `owner` (the
 * slot's, so a new incarnation of a crashed worker takes its leases over early; or one all workers share).
 */
export function startWorldWorker(world: WorldContext, process: SimulatedProcess, owner: string): AgentWorker {
  const { store, dispatcher, scheduler } = world;
  const ids = scheduler.ids(process.name);
  const runtime = createRuntime()
    .model('m', new WorldModel(world, process, ids))
    .agent({
      id: 'a',
      model: 'm',
      tools: worldTools(world, process, owner),
      plugins: [{ plugin: permissionPlugin, config: { rules: worldPermissionRules } }],
    })
    .store(store.forProcess(process))
    .options({ leaseTtlMs, owner, clock: process.clock, ids })
    .build();
  const worker = new AgentWorker({
    runtime,
    dispatcher: dispatcher.forProcess(process),
    workerId: process.name,
    concurrency: 1,
    claimLockMs,
    idleWaitMs: 1_000,
    strandedScanIntervalMs: 0,
    clock: process.clock,
  });
  worker.start();
  return worker;
}
