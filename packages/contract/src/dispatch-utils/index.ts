// Helpers for dispatcher implementers (`@lunation/contract/dispatch-utils`): the policy defaults, the checks
// every dispatcher makes on a submission, and the errors it raises. Not part of the spec.
export {
  assertSubmission,
  claimLostError,
  dispatchPolicyDefaults,
  dispatchRetryDelay,
  overloadedError,
  parseRunEventId,
  type ResolvedDispatchPolicy,
  resolveDispatchPolicy,
} from './dispatch-input.js';
