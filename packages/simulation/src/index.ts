export { type CallFault, type CallFaults, countFault, drawCallFault, type FaultCounts } from './faults.js';
export { PriorityQueue } from './priority-queue.js';
export {
  describeError,
  describeValue,
  type OperationOptions,
  type RunOptions,
  type RunOutcome,
  Scheduler,
  type SchedulerOptions,
  SimulatedProcess,
  unavailableError,
} from './scheduler.js';
export { SeededRandom } from './seeded-random.js';
export { SimulatedStore, type SimulatedStoreOptions, type StoreFaults } from './simulated-store.js';
export { Trace, type TraceOptions } from './trace.js';
