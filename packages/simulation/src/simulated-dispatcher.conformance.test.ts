import { runDispatcherConformance } from '@lunation/dispatch-testkit';
import { Scheduler } from './scheduler.js';
import { SimulatedDispatcher } from './simulated-dispatcher.js';

let siblings = 0;

// Live mode: every call is still an operation the scheduler completes, in an order seed 1 decides, but on the real
// clock, since the kit waits for real time (lock expiries, backoffs).
runDispatcherConformance({
  name: 'simulated',
  tsconfig: new URL('../tsconfig.json', import.meta.url),
  create: async (policy) =>
    new SimulatedDispatcher({ ...policy, scheduler: new Scheduler({ seed: 1, mode: 'live' }) }),
  createSibling: async (dispatcher, policy) => {
    const simulated = dispatcher as SimulatedDispatcher;
    return new SimulatedDispatcher({
      ...policy,
      scheduler: simulated.scheduler,
      process: simulated.scheduler.process(`sibling-${++siblings}`),
      backend: simulated.backend,
    });
  },
  redeliveryMs: 1_000,
  // Its backend lives in this process's memory, as the local dispatcher's does: no worker process can reach it.
  workerProcess: false,
});
