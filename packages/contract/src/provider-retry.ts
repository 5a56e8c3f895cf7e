import { LunationError } from './errors.js';

/** How retryable errors that happen before the first streamed part are retried. */
export interface RetryOptions {
  /** Retries after the first attempt. @default 2 */
  maxRetries?: number;
  /** Ceiling of the first backoff delay; it doubles with every retry. @default 500 */
  initialDelayMs?: number;
  /** Upper bound of one backoff delay. @default 8000 */
  maxDelayMs?: number;
  /** A Retry-After longer than this is not waited for: the error is thrown at once. @default 60000 */
  maxRetryAfterMs?: number;
}

/** {@link RetryOptions} with every default filled in. */
export type RetryPolicy = Required<RetryOptions>;

/** The retry policy from a provider's `retry` option (and its `maxRetries` shorthand), defaults filled in. */
export function resolveRetryPolicy(
  retry: RetryOptions | undefined,
  maxRetries: number | undefined,
): RetryPolicy {
  return {
    maxRetries: retry?.maxRetries ?? maxRetries ?? 2,
    initialDelayMs: retry?.initialDelayMs ?? 500,
    maxDelayMs: retry?.maxDelayMs ?? 8_000,
    maxRetryAfterMs: retry?.maxRetryAfterMs ?? 60_000,
  };
}

/** Exponential backoff with full jitter, never shorter than the provider's Retry-After. */
export function retryDelay(
  policy: RetryPolicy,
  retryIndex: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** retryIndex);
  const jittered = Math.floor(random() * ceiling);
  return retryAfterMs === undefined ? jittered : Math.max(retryAfterMs, jittered);
}

interface HeaderReader {
  get(name: string): string | null;
}

/** Milliseconds from `retry-after-ms`, or `retry-after` as seconds or an HTTP date. */
export function parseRetryAfter(
  headers: HeaderReader | undefined,
  now: number = Date.now(),
): number | undefined {
  if (headers === undefined) return undefined;
  const milliseconds = Number.parseFloat(headers.get('retry-after-ms') ?? '');
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return Math.round(milliseconds);
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number.parseFloat(value) * 1_000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Options of {@link streamWithRetries}. */
export interface StreamWithRetriesOptions<T> {
  policy: RetryPolicy;
  signal: AbortSignal | undefined;
  /** One attempt; it throws LunationErrors. */
  attempt: () => AsyncIterable<T>;
  /** The error thrown when the signal aborts. */
  cancelled: () => LunationError;
}

/**
 * Runs attempts until one completes, retrying retryable errors with backoff, but only while no part
 * has been yielded yet. Aborting the signal (also during a backoff wait) throws `cancelled()`.
 */
export async function* streamWithRetries<T>(options: StreamWithRetriesOptions<T>): AsyncGenerator<T> {
  const { policy, signal } = options;
  for (let retryIndex = 0; ; retryIndex++) {
    if (signal?.aborted) throw options.cancelled();
    let yielded = false;
    try {
      for await (const part of options.attempt()) {
        yielded = true;
        yield part;
      }
      return;
    } catch (error) {
      if (signal?.aborted) throw options.cancelled();
      const lunationError = LunationError.isInstance(error)
        ? error
        : new LunationError('internal', `A provider attempt threw a non-Lunation error: ${String(error)}`, {
            cause: error,
          });
      const retryAfterTooLong = (lunationError.retryAfterMs ?? 0) > policy.maxRetryAfterMs;
      if (yielded || !lunationError.isRetryable || retryIndex >= policy.maxRetries || retryAfterTooLong) {
        throw retryIndex === 0 ? lunationError : withAttempts(lunationError, retryIndex + 1);
      }
      await sleep(retryDelay(policy, retryIndex, lunationError.retryAfterMs), signal);
    }
  }
}

function withAttempts(error: LunationError, attempts: number): LunationError {
  return new LunationError(error.code, `${error.message} (gave up after ${attempts} attempts)`, {
    cause: error.cause,
    retryable: error.isRetryable,
    retryAfterMs: error.retryAfterMs,
    status: error.status,
    details: { ...error.details, attempts },
  });
}

/** Resolves after `ms`, or as soon as the signal aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
