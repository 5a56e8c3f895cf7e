import { AgentWorker } from '@lunation/fleet';
import { createRuntime, permissionPlugin } from '@lunation/runtime';
import { ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import type { SimulatedProcess } from './scheduler.js';
import type { WorldContext } from './world-context.js';
import { planOf, worldPermissionRules, worldTools } from './world-tools.js';

/** The thread lease and claim lock of the world's workers: long in virtual time (see `runRuntimeWorld`). */
export const leaseTtlMs = 30_000;
export const claimLockMs = 30_000;

/**
 * One worker process of the runtime world: an `AgentWorker` (`concurrency: 1`) whose runtime has the world's
 * tools and a scripted model (each answer an operation of the process): a run's first step calls the tools its
 * input names, all at once; its next step answers. The owner name is the slot's, so a new incarnation of a
 * crashed worker takes its leases over early.
 */
export function startWorldWorker(world: WorldContext, process: SimulatedProcess, slot: number): AgentWorker {
  const { scheduler, store, dispatcher } = world;
  const model = new ScriptedModel((request) => {
    const lastUser = request.messages.filter((message) => message.role === 'user').at(-1);
    const text = lastUser?.content[0]?.type === 'text' ? lastUser.content[0].text : '';
    const answered = request.messages.at(-1)?.role === 'tool';
    const plan = planOf(text);
    const response: ScriptedResponse =
      answered || plan.length === 0
        ? { text: `done: ${text}` }
        : {
            text: 'working',
            toolCalls: plan.map((toolName, index) => ({ toolName, arguments: { amount: index + 1 } })),
          };
    return scheduler.operation(process, `model ${text}`, () => response);
  });
  const runtime = createRuntime()
    .model('m', model)
    .agent({
      id: 'a',
      model: 'm',
      tools: worldTools(world, process, `w${slot}`),
      plugins: [{ plugin: permissionPlugin, config: { rules: worldPermissionRules } }],
    })
    .store(store.forProcess(process))
    .options({ leaseTtlMs, owner: `w${slot}` })
    .build();
  const worker = new AgentWorker({
    runtime,
    dispatcher: dispatcher.forProcess(process),
    workerId: process.name,
    concurrency: 1,
    claimLockMs,
    idleWaitMs: 1_000,
    strandedScanIntervalMs: 0,
  });
  worker.start();
  return worker;
}
