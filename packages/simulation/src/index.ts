export { type FaultProfile, faultProfiles } from './fault-profiles.js';
export {
  type CallFault,
  type CallFaults,
  countFault,
  drawCallFault,
  type FaultCounts,
  FaultSchedule,
  type ScheduledFault,
} from './faults.js';
export {
  type InboxMutation,
  type InboxWorldOptions,
  runInboxWorld,
  type WorldReport,
} from './inbox-world.js';
export { PriorityQueue } from './priority-queue.js';
export { type RuntimeWorldOptions, runRuntimeWorld } from './runtime-world.js';
export {
  describeError,
  describeValue,
  type OperationOptions,
  type OperationWatcher,
  type RunOptions,
  type RunOutcome,
  Scheduler,
  type SchedulerOptions,
  SimulatedProcess,
  unavailableError,
} from './scheduler.js';
export { SeededIds } from './seeded-ids.js';
export { SeededRandom } from './seeded-random.js';
export {
  failureKind,
  type ShrinkOptions,
  type ShrinkResult,
  shrinkFaults,
  type WorldRun,
} from './shrink.js';
export { SimulatedDatabase, type SimulatedRow, SimulatedTransaction } from './simulated-database.js';
export {
  type DispatchFaults,
  SimulatedDispatcher,
  type SimulatedDispatcherOptions,
} from './simulated-dispatcher.js';
export {
  SimulatedStore,
  type SimulatedStoreOptions,
  type StoreActivity,
  type StoreFaults,
} from './simulated-store.js';
export { Trace, type TraceOptions } from './trace.js';
export type { WorkerFaults } from './world-faults.js';
export { type WorldEffect, WorldLedger } from './world-ledger.js';
