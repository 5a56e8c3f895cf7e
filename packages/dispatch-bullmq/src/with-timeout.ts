import { type Clock, LunationError } from '@lunation/contract';

/**
 * `promise`, or a retryable `store-unavailable` after `ms`: the worker's BullMQ connections wait for Redis to come
 * back (as BullMQ wants), the dispatcher's calls do not. A value that arrives too late goes to `onLate`.
 */
export function withTimeout<T>(
  promise: Promise<T>,
  limit: { ms: number; clock: Clock },
  what: string,
  onLate?: (value: T) => void,
): Promise<T> {
  const { ms, clock } = limit;
  return new Promise((resolve, reject) => {
    let timedOut = false;
    const timer = clock.setTimeout(() => {
      timedOut = true;
      reject(
        new LunationError(
          'store-unavailable',
          `Redis did not answer the dispatcher's ${what} within ${ms} ms; check that the server is running and reachable, then retry`,
          { details: { timeoutMs: ms } },
        ),
      );
    }, ms);
    promise.then(
      (value) => {
        clock.clearTimeout(timer);
        if (!timedOut) resolve(value);
        else onLate?.(value);
      },
      (error: unknown) => {
        clock.clearTimeout(timer);
        if (!timedOut) reject(error);
      },
    );
  });
}
