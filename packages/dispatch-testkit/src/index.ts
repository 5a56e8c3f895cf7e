export {
  collect,
  eventually,
  expectLunationError,
  makeDecisionsSubmission,
  makeEvent,
  makeEvents,
  makeSubmission,
  sleep,
  uniqueId,
} from './fixtures.js';
export { type DispatcherConformanceOptions, runDispatcherConformance } from './run-dispatcher-conformance.js';
export type { WorkerProcessOptions } from './specs/fleet-spec.js';
