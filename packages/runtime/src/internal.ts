// `@lunation/runtime/internal`: what the sample app uses, and types the public ones refer to, outside the
// documented API. No stability promise: a release may change them without a `minor` changeset.
export { createId } from './id.js';
export { PluginSet } from './plugin.js';
export { formatIssues } from './tool.js';
