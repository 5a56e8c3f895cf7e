// Helpers for dispatcher implementers (`@lunation/contract/dispatch-utils`): the policy defaults, the checks
// every dispatcher makes on a submission, and the errors it raises. Not part of the spec.

// The input checks dispatchers share with stores.
export { assertId, assertInteger, assertObject, toJsonText } from '../store-utils/store-input.js';
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
export {
  assertAppendEvents,
  assertFence,
  eventLogEndedError,
  staleEventFenceError,
} from './run-event-fence.js';
