// Helpers for provider implementers (`@lunation/contract/provider-utils`): retries before the first part,
// and mapping a vendor's HTTP statuses and error types to error codes. Not part of the spec.
export {
  cancelledError,
  errorCodeForErrorType,
  errorCodeForStatus,
  type ProviderErrorInput,
  type ProviderLabel,
  providerError,
  streamInterruptedError,
} from './provider-errors.js';
export {
  DEFAULT_STREAM_IDLE_TIMEOUT_MS,
  parseRetryAfter,
  type RetryOptions,
  type RetryPolicy,
  resolveRetryPolicy,
  retryDelay,
  type StreamWithRetriesOptions,
  streamWithRetries,
} from './provider-retry.js';
