// `@lunation/runtime/internal`: what the sample app uses, and types and schemas the public ones refer to, outside
// the documented API. No stability promise: a release may change them without a `minor` changeset.
export { createId } from './id.js';
export { PHASES } from './phase.js';
export { PluginSet } from './plugin.js';
export {
  type PermissionConfig,
  type PermissionDecision,
  permissionConfigSchema,
  permissionRuleSchema,
} from './plugins/permission-plugin.js';
export { formatIssues } from './tool.js';
