/** A pending timer of a {@link Clock}: pass it to `clearTimeout` / `clearInterval` to stop it. */
export interface ClockTimer {
  /**
   * Lets the process exit while this timer is pending (Node's `timer.unref()`); a simulated clock ignores it.
   * Returns the timer itself.
   */
  unref(): ClockTimer;
  /** Keeps the process alive while this timer is pending again, after `unref` (Node's `timer.ref()`). */
  ref(): ClockTimer;
}

/**
 * Where the runtime, the fleet, stores and dispatchers read time and set timers. {@link systemClock} is the real
 * one; a simulation injects a virtual clock so that the same seed replays the same run, timers and all.
 */
export interface Clock {
  /** Wall-clock time in epoch milliseconds, as `Date.now()`. Stored timestamps and lease expiries use it. */
  now(): number;
  /** A monotonic reading in milliseconds, as `performance.now()`: for durations, never for stored times. */
  monotonic(): number;
  /** Calls `callback` once, `ms` milliseconds from now. */
  setTimeout(callback: () => void, ms: number): ClockTimer;
  /** Calls `callback` every `ms` milliseconds until cleared. */
  setInterval(callback: () => void, ms: number): ClockTimer;
  /** Stops a timer made by `setTimeout`; nothing happens for `undefined` or a timer that already ran. */
  clearTimeout(timer: ClockTimer | undefined): void;
  /** Stops a timer made by `setInterval`; nothing happens for `undefined`. */
  clearInterval(timer: ClockTimer | undefined): void;
  /**
   * Resolves after `ms` milliseconds; rejects with the signal's `reason` as soon as `signal` aborts (at once when
   * it already has).
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The handle Node (or a browser) gives for a timer, with its optional `unref`. */
interface HostTimer {
  unref?(): unknown;
  ref?(): unknown;
}

/** A {@link ClockTimer} over a host timer. */
class SystemTimer implements ClockTimer {
  constructor(readonly handle: HostTimer) {}

  unref(): ClockTimer {
    this.handle.unref?.();
    return this;
  }

  ref(): ClockTimer {
    this.handle.ref?.();
    return this;
  }
}

/**
 * A host timer as a {@link ClockTimer}: Node's `Timeout` is one already (its `unref` and `ref` return it), so it
 * goes as it is, with no wrapper allocated per timer; a browser's numeric handle gets a {@link SystemTimer}.
 */
function clockTimer(handle: unknown): ClockTimer {
  if (typeof handle === 'object' && handle !== null) {
    const host = handle as HostTimer;
    if (typeof host.unref === 'function' && typeof host.ref === 'function') return handle as ClockTimer;
  }
  return new SystemTimer(handle as HostTimer);
}

/** What the host's `clearTimeout` takes for a timer: a wrapped handle, or Node's own `Timeout`. */
function hostHandle(timer: ClockTimer | undefined): unknown {
  return timer instanceof SystemTimer ? timer.handle : timer;
}

/**
 * The real clock: `Date.now()`, `performance.now()` and the host's timers. The default wherever a `Clock` can be
 * injected, so code that takes one behaves as before when given none.
 */
export const systemClock: Clock = Object.freeze({
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (callback: () => void, ms: number): ClockTimer => clockTimer(setTimeout(callback, ms)),
  setInterval: (callback: () => void, ms: number): ClockTimer => clockTimer(setInterval(callback, ms)),
  clearTimeout(timer: ClockTimer | undefined): void {
    const handle = hostHandle(timer);
    if (handle !== undefined) clearTimeout(handle as Parameters<typeof clearTimeout>[0]);
  },
  clearInterval(timer: ClockTimer | undefined): void {
    const handle = hostHandle(timer);
    if (handle !== undefined) clearInterval(handle as Parameters<typeof clearInterval>[0]);
  },
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(systemClock, ms, signal);
  },
});

/**
 * `Clock.sleep` built on a clock's own `setTimeout`: resolves after `ms`, rejects with the signal's reason when it
 * aborts (the timer is cleared). Clocks other than {@link systemClock} can implement `sleep` with it.
 */
export function sleepOn(
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clock.clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
