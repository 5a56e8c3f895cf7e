// Helpers for store implementers (`@lunation/contract/store-utils`): the input checks every store makes the
// same way, the errors the lease fences raise, and an opaque page cursor. Not part of the spec.

export { type CursorPosition, decodeCursor, encodeCursor } from './page-cursor.js';
export {
  assertBeginToolExecution,
  assertCheckpointCommit,
  assertId,
  assertInteger,
  assertObject,
  defaultPageLimit,
  leaseHeldElsewhere,
  ledgerEntriesToWrite,
  ledgerEntryElsewhere,
  pageLimit,
  toJsonText,
  unissuedLeaseToken,
} from './store-input.js';
export { assertEffectSignal, runEffectUntilAborted } from './tool-effect-signal.js';
