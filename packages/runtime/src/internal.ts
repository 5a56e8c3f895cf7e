// `@lunation/runtime/internal`: what Lunation's own packages (`@lunation/fleet`, `@lunation/http`, the sample app)
// build on, outside the API the README documents for users, and types the public ones refer to. No stability
// promise: a release may change them without a `minor` changeset.
export { ownsThread } from './decision-admission.js';
export type { AgentRuntimeOptions } from './executor/runtime-options.js';
export { createId } from './id.js';
export type { RunJournalRunner } from './loop/run-journal.js';
export { RUN_JOURNAL_KEY, type RunJournalEntry, runJournalOf } from './loop/run-journal-reader.js';
export { PHASES } from './phase.js';
export { PluginSet } from './plugin.js';
export {
  type PermissionConfig,
  type PermissionDecision,
  permissionConfigSchema,
  permissionRuleSchema,
} from './plugins/permission-plugin.js';
export { forkThread, listCheckpoints } from './time-travel.js';
export { formatIssues } from './tool.js';
