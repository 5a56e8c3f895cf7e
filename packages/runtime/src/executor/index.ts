// `@lunation/runtime/executor`: the executor seam, for packages that run a runtime's work in a process that did
// not accept it (a fleet's workers: `@lunation/fleet`) and for the fronts that submit it there.

export { admitDecisions, type DecisionAdmission } from '../decision-admission.js';
export { createId } from '../id.js';
export { type ScanPosition, threadsWithLatestRun } from '../thread-scan.js';
export type { LoadedRun, RunExecutor } from './run-executor.js';
export { normaliseInput, validateDecisionShapes } from './run-options.js';
