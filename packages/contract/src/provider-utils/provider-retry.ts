import { type Clock, type ClockTimer, systemClock } from '../clock.js';
import { LunationError } from '../errors.js';
import { type IdSource, systemIds } from '../id-source.js';

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
  random: () => number = systemIds.random,
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
  now: number = systemClock.now(),
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

/** How long a stream may go without a part before it counts as stalled. @default 120000 */
export const DEFAULT_STREAM_IDLE_TIMEOUT_MS = 120_000;

/** Options of {@link streamWithRetries}. */
export interface StreamWithRetriesOptions<T> {
  policy: RetryPolicy;
  signal: AbortSignal | undefined;
  /**
   * One attempt; it throws LunationErrors. `signal` aborts when the caller's signal does or when the attempt
   * stalls: pass it to the HTTP request so the connection is closed.
   */
  attempt: (signal: AbortSignal) => AsyncIterable<T>;
  /** The error thrown when the signal aborts. */
  cancelled: () => LunationError;
  /**
   * Most milliseconds between two parts (and before the first). A stall before the first part is a retryable
   * `timeout`; after it, `stream-interrupted` (the parts already yielded stand). 0 disables.
   * @default DEFAULT_STREAM_IDLE_TIMEOUT_MS
   */
  idleTimeoutMs?: number;
  /** Where backoff waits and stall timers run. @default systemClock */
  clock?: Clock;
  /** Where the backoff's jitter is drawn. @default systemIds */
  ids?: IdSource;
}

/**
 * Runs attempts until one completes, retrying retryable errors with backoff, but only while no part
 * has been yielded yet. Aborting the signal (also during a backoff wait) throws `cancelled()`; an attempt that
 * goes `idleTimeoutMs` without a part is aborted and fails with a typed error.
 */
export async function* streamWithRetries<T>(options: StreamWithRetriesOptions<T>): AsyncGenerator<T> {
  const { policy, signal } = options;
  const clock = options.clock ?? systemClock;
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_STREAM_IDLE_TIMEOUT_MS;
  for (let retryIndex = 0; ; retryIndex++) {
    if (signal?.aborted) throw options.cancelled();
    let yielded = false;
    let done = false;
    const watchdog = new StallWatchdog(idleTimeoutMs, signal, clock);
    let iterator: AsyncIterator<T> | undefined;
    try {
      iterator = options.attempt(watchdog.signal)[Symbol.asyncIterator]();
      for (;;) {
        const next = await watchdog.race(iterator.next());
        if (next.done) {
          done = true;
          break;
        }
        yielded = true;
        watchdog.touch();
        yield next.value;
      }
      return;
    } catch (error) {
      if (signal?.aborted) throw options.cancelled();
      const lunationError = watchdog.stalled
        ? stallError(idleTimeoutMs, yielded)
        : LunationError.isInstance(error)
          ? error
          : new LunationError('internal', `A provider attempt threw a non-Lunation error: ${String(error)}`, {
              cause: error,
            });
      const retryAfterTooLong = (lunationError.retryAfterMs ?? 0) > policy.maxRetryAfterMs;
      if (yielded || !lunationError.isRetryable || retryIndex >= policy.maxRetries || retryAfterTooLong) {
        throw retryIndex === 0 ? lunationError : withAttempts(lunationError, retryIndex + 1);
      }
      const random = (options.ids ?? systemIds).random;
      await backoff(clock, retryDelay(policy, retryIndex, lunationError.retryAfterMs, random), signal);
    } finally {
      watchdog.dispose();
      // Close the attempt when the consumer stopped early or it failed; a stalled one may be stuck in `next()`,
      // so it is not waited for (its signal is aborted).
      if (iterator && !done) {
        const closing = iterator.return?.();
        if (watchdog.stalled) closing?.catch(() => {});
        else await closing?.catch(() => {});
      }
    }
  }
}

function stallError(idleTimeoutMs: number, yielded: boolean): LunationError {
  return yielded
    ? new LunationError(
        'stream-interrupted',
        `The model stream stalled: no part for ${idleTimeoutMs} ms after it started; the partial answer is kept`,
        { retryable: false },
      )
    : new LunationError('timeout', `The model stream sent nothing for ${idleTimeoutMs} ms`, {
        retryable: true,
      });
}

/**
 * Aborts an attempt that goes too long without a part. One timer per stall period: it is re-armed lazily
 * for the time left since the last part, not reset on every part.
 */
class StallWatchdog {
  private readonly controller = new AbortController();
  private lastPartAt: number;
  private timer: ClockTimer | undefined;
  private rejectStall: ((error: unknown) => void) | undefined;
  private readonly stall: Promise<never> | undefined;
  private readonly onAbort: (() => void) | undefined;
  stalled = false;

  constructor(
    private readonly idleTimeoutMs: number,
    private readonly parent: AbortSignal | undefined,
    private readonly clock: Clock,
  ) {
    this.lastPartAt = clock.now();
    if (parent) {
      this.onAbort = () => this.controller.abort(parent.reason);
      parent.addEventListener('abort', this.onAbort, { once: true });
    }
    if (idleTimeoutMs > 0) {
      this.stall = new Promise<never>((_, reject) => {
        this.rejectStall = reject;
      });
      this.stall.catch(() => {});
      this.arm(idleTimeoutMs);
    }
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  touch(): void {
    this.lastPartAt = this.clock.now();
  }

  race<V>(next: Promise<V>): Promise<V> {
    return this.stall ? Promise.race([next, this.stall]) : next;
  }

  private arm(ms: number): void {
    this.timer = this.clock.setTimeout(() => {
      const idle = this.clock.now() - this.lastPartAt;
      if (idle < this.idleTimeoutMs) return this.arm(this.idleTimeoutMs - idle);
      this.stalled = true;
      const error = new LunationError('timeout', `no part for ${this.idleTimeoutMs} ms`);
      this.controller.abort(error);
      this.rejectStall?.(error);
    }, ms);
    this.timer.unref();
  }

  dispose(): void {
    this.clock.clearTimeout(this.timer);
    if (this.parent && this.onAbort) this.parent.removeEventListener('abort', this.onAbort);
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

/** Resolves after `ms`, or as soon as the signal aborts (the caller then throws its cancel error). */
function backoff(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return clock.sleep(ms, signal).catch(() => undefined);
}
