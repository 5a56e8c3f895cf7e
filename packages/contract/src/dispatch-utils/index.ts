// Helpers for dispatcher implementers (`@lunation/contract/dispatch-utils`): `CheckedDispatcher`, which owns what
// every dispatcher does the same way (argument checks, closed state, error mapping, the specification version)
// over a backend's operations; the policy defaults; the errors a dispatcher raises. Not part of the spec.

// The input checks dispatchers share with stores.
export { assertId, assertInteger, assertObject, toJsonText } from '../store-utils/store-input.js';
export {
  type CheckedClaimOptions,
  CheckedDispatcher,
  type DispatchBackend,
} from './checked-dispatcher.js';
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
