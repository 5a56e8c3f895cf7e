import { runStoreConformance } from '@lunation/store-testkit';
import { Scheduler } from './scheduler.js';
import { SimulatedStore } from './simulated-store.js';

// Live mode: every call is still an operation the scheduler completes, in an order seed 1 decides, but on the real
// clock, since the kit waits for real time (lease expiries).
runStoreConformance({
  name: 'simulated',
  tsconfig: new URL('../tsconfig.json', import.meta.url),
  transactionalToolEffects: true,
  create: async () => new SimulatedStore({ scheduler: new Scheduler({ seed: 1, mode: 'live' }) }),
  createSibling: async (store) => {
    const simulated = store as SimulatedStore;
    return simulated.forProcess(simulated.scheduler.process('sibling'));
  },
});
