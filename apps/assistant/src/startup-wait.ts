import { LunationError } from '@lunation/contract';

/** How long the app waits, by default, for its store and dispatcher to answer at start-up (seconds). */
export const DEFAULT_STARTUP_WAIT_SECONDS = 30;

/** How long one attempt may take before it counts as no answer. */
const ATTEMPT_MS = 5_000;

export interface StartupWaitOptions {
  /** How long to keep trying, in milliseconds (`--startup-wait` / `ASSISTANT_STARTUP_WAIT`, in seconds). */
  waitMs: number;
  /** Told of each failed attempt that is retried. */
  log?(line: string): void;
  /** @default 5000 */
  attemptMs?: number;
}

/**
 * Opens something that may answer late — a server still starting, or this process starved of CPU on a busy
 * machine: tries `open` (each attempt given `min(attemptMs, time left)`), and after a failure tries again with
 * back-off (250 ms doubling to 2 s, with jitter) until `waitMs` has passed since the first attempt. The last
 * failure is rethrown as `store-unavailable`, saying how to wait longer.
 */
export async function withStartupWait<T>(
  what: string,
  open: (timeoutMs: number) => Promise<T>,
  options: StartupWaitOptions,
): Promise<T> {
  const attemptMs = options.attemptMs ?? ATTEMPT_MS;
  const deadline = Date.now() + options.waitMs;
  let delayMs = 250;
  for (let attempt = 1; ; attempt++) {
    try {
      return await open(Math.max(1, Math.min(attemptMs, deadline - Date.now())));
    } catch (error) {
      const left = deadline - Date.now();
      const message = error instanceof Error ? error.message : String(error);
      if (left <= 0) {
        throw new LunationError(
          'store-unavailable',
          `${message} (tried ${attempt} time${attempt === 1 ? '' : 's'} over ${Math.round(options.waitMs / 1_000)} s; ` +
            'wait longer with --startup-wait <seconds> or ASSISTANT_STARTUP_WAIT)',
          { cause: error },
        );
      }
      const pause = Math.min(left, delayMs * (0.5 + Math.random() / 2));
      options.log?.(
        `  ${what} did not answer yet (${message}); trying again for up to ${Math.ceil(left / 1_000)} s`,
      );
      await new Promise((resolve) => setTimeout(resolve, pause));
      delayMs = Math.min(2_000, delayMs * 2);
    }
  }
}
