import type { Clock } from '@lunation/contract';

/**
 * A wake-up flag that cannot be missed: a waiter notes `version` before it looks for work and passes it to `wait`,
 * which resolves at once when a `wake()` came in between.
 */
export class Waker {
  #version = 0;
  readonly #waiters = new Set<() => void>();
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Grows with each `wake()`. */
  get version(): number {
    return this.#version;
  }

  wake(): void {
    this.#version++;
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const waiter of waiters) waiter();
  }

  /** Resolves after a `wake()` later than `version`, after `ms`, or when `signal` aborts, whichever is first. */
  wait(version: number, ms: number, signal?: AbortSignal): Promise<void> {
    if (this.#version !== version || signal?.aborted || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.#clock.clearTimeout(timer);
        this.#waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = this.#clock.setTimeout(done, ms);
      this.#waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}
