import { LunationError } from './errors.js';

/**
 * A helper for implementers that moved out of the contract's root to a subpath. It is not callable: TypeScript
 * refuses a call (`Type 'MovedHelper<"assertId", "@lunation/contract/store-utils">' has no call signatures`), and
 * a call that still happens (JavaScript, a stale build) throws `specification-mismatch` naming the subpath, where
 * it would otherwise fail as `assertId is not a function`.
 */
export interface MovedHelper<Name extends string, Subpath extends string> {
  /** The helper's name. */
  readonly helper: Name;
  /** The subpath to import it from now. */
  readonly movedTo: Subpath;
}

function moved<Name extends string, Subpath extends string>(
  helper: Name,
  movedTo: Subpath,
): MovedHelper<Name, Subpath> {
  const stub = () => {
    throw new LunationError(
      'specification-mismatch',
      `${helper} moved from @lunation/contract to ${movedTo}: import { ${helper} } from '${movedTo}' (the adapter was written against an older contract)`,
      { details: { helper, movedTo } },
    );
  };
  return Object.assign(stub, { helper, movedTo });
}

const storeUtils = '@lunation/contract/store-utils';
const providerUtils = '@lunation/contract/provider-utils';
const dispatchUtils = '@lunation/contract/dispatch-utils';

/** @deprecated Moved: import `assertId` from `@lunation/contract/store-utils` (or `/dispatch-utils`). */
export const assertId = moved('assertId', storeUtils);
/** @deprecated Moved: import `assertInteger` from `@lunation/contract/store-utils` (or `/dispatch-utils`). */
export const assertInteger = moved('assertInteger', storeUtils);
/** @deprecated Moved: import `assertObject` from `@lunation/contract/store-utils` (or `/dispatch-utils`). */
export const assertObject = moved('assertObject', storeUtils);
/** @deprecated Moved: import `assertCheckpointCommit` from `@lunation/contract/store-utils`. */
export const assertCheckpointCommit = moved('assertCheckpointCommit', storeUtils);
/** @deprecated Moved: import `assertBeginToolExecution` from `@lunation/contract/store-utils`. */
export const assertBeginToolExecution = moved('assertBeginToolExecution', storeUtils);
/** @deprecated Moved: import `pageLimit` from `@lunation/contract/store-utils`. */
export const pageLimit = moved('pageLimit', storeUtils);
/** @deprecated Moved: import `defaultPageLimit` from `@lunation/contract/store-utils`. */
export const defaultPageLimit = moved('defaultPageLimit', storeUtils);
/** @deprecated Moved: import `toJsonText` from `@lunation/contract/store-utils` (or `/dispatch-utils`). */
export const toJsonText = moved('toJsonText', storeUtils);
/** @deprecated Moved: import `unissuedLeaseToken` from `@lunation/contract/store-utils`. */
export const unissuedLeaseToken = moved('unissuedLeaseToken', storeUtils);
/** @deprecated Moved: import `leaseHeldElsewhere` from `@lunation/contract/store-utils`. */
export const leaseHeldElsewhere = moved('leaseHeldElsewhere', storeUtils);
/** @deprecated Moved: import `ledgerEntryElsewhere` from `@lunation/contract/store-utils`. */
export const ledgerEntryElsewhere = moved('ledgerEntryElsewhere', storeUtils);

/** @deprecated Moved: import `streamWithRetries` from `@lunation/contract/provider-utils`. */
export const streamWithRetries = moved('streamWithRetries', providerUtils);
/** @deprecated Moved: import `resolveRetryPolicy` from `@lunation/contract/provider-utils`. */
export const resolveRetryPolicy = moved('resolveRetryPolicy', providerUtils);
/** @deprecated Moved: import `retryDelay` from `@lunation/contract/provider-utils`. */
export const retryDelay = moved('retryDelay', providerUtils);
/** @deprecated Moved: import `parseRetryAfter` from `@lunation/contract/provider-utils`. */
export const parseRetryAfter = moved('parseRetryAfter', providerUtils);
/** @deprecated Moved: import `DEFAULT_STREAM_IDLE_TIMEOUT_MS` from `@lunation/contract/provider-utils`. */
export const DEFAULT_STREAM_IDLE_TIMEOUT_MS = moved('DEFAULT_STREAM_IDLE_TIMEOUT_MS', providerUtils);
/** @deprecated Moved: import `providerError` from `@lunation/contract/provider-utils`. */
export const providerError = moved('providerError', providerUtils);
/** @deprecated Moved: import `cancelledError` from `@lunation/contract/provider-utils`. */
export const cancelledError = moved('cancelledError', providerUtils);
/** @deprecated Moved: import `streamInterruptedError` from `@lunation/contract/provider-utils`. */
export const streamInterruptedError = moved('streamInterruptedError', providerUtils);
/** @deprecated Moved: import `errorCodeForStatus` from `@lunation/contract/provider-utils`. */
export const errorCodeForStatus = moved('errorCodeForStatus', providerUtils);
/** @deprecated Moved: import `errorCodeForErrorType` from `@lunation/contract/provider-utils`. */
export const errorCodeForErrorType = moved('errorCodeForErrorType', providerUtils);

/** @deprecated Moved: import `resolveDispatchPolicy` from `@lunation/contract/dispatch-utils`. */
export const resolveDispatchPolicy = moved('resolveDispatchPolicy', dispatchUtils);
/** @deprecated Moved: import `dispatchPolicyDefaults` from `@lunation/contract/dispatch-utils`. */
export const dispatchPolicyDefaults = moved('dispatchPolicyDefaults', dispatchUtils);
/** @deprecated Moved: import `dispatchRetryDelay` from `@lunation/contract/dispatch-utils`. */
export const dispatchRetryDelay = moved('dispatchRetryDelay', dispatchUtils);
/** @deprecated Moved: import `assertSubmission` from `@lunation/contract/dispatch-utils`. */
export const assertSubmission = moved('assertSubmission', dispatchUtils);
/** @deprecated Moved: import `parseRunEventId` from `@lunation/contract/dispatch-utils`. */
export const parseRunEventId = moved('parseRunEventId', dispatchUtils);
/** @deprecated Moved: import `claimLostError` from `@lunation/contract/dispatch-utils`. */
export const claimLostError = moved('claimLostError', dispatchUtils);
/** @deprecated Moved: import `overloadedError` from `@lunation/contract/dispatch-utils`. */
export const overloadedError = moved('overloadedError', dispatchUtils);
