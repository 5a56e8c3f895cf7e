// Helpers for store implementers (`@lunation/contract/store-utils`): `CheckedStore`, which owns what every store
// does the same way (argument checks, closed state, error mapping, the specification version) over a backend's
// atomic operations; the errors the lease fences raise; an opaque page cursor. Not part of the spec.

export {
  type CheckedListMessagesOptions,
  type CheckedListRunsOptions,
  type CheckedListThreadsOptions,
  CheckedStore,
  type StoreBackend,
  type StoreOperations,
} from './checked-store.js';
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
export { assertEffectSignal, assertToolEffect, runEffectUntilAborted } from './tool-effect-signal.js';
