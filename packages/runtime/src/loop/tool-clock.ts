import { type Clock, type ClockTimer, LunationError } from '@lunation/contract';

/** One running call as the clock sees it (its fields are set by `ToolClock.watch`). */
export interface Watch {
  readonly timeoutMs: number;
  deadline: number;
  timedOut: boolean;
  cancelled: boolean;
  /** When a timed-out or cancelled call that has not settled is abandoned (0: not yet due). */
  abandonAt: number;
  /** Created when the tool first reads its signal. */
  controller: AbortController | undefined;
  /** Settles the call as abandoned; set by whoever waits for it. */
  abandon: (() => void) | undefined;
}

/**
 * Timeouts and cancellation of a run's running tool calls, on one timer for the whole run (armed for the
 * earliest due time, re-armed lazily): a call past its deadline, or running when the run is cancelled, has
 * its signal aborted; if it still has not settled after the grace period it is abandoned.
 */
export class ToolClock {
  /** The running calls (few at a time: a list, which unlike a Set allocates nothing as calls come and go). */
  private readonly watches: Watch[] = [];
  private timer: ClockTimer | undefined;
  private armedFor = Number.POSITIVE_INFINITY;
  private disposed = false;

  /** `cancelAll()` must be called when `runSignal` aborts (the loop listens once for all its parts). */
  constructor(
    private readonly runSignal: AbortSignal,
    private readonly graceMs: number,
    private readonly clock: Clock,
  ) {}

  /** Starts watching a call (its `timeoutMs`: 0 means no timeout). */
  watch(watch: Watch): void {
    const { timeoutMs } = watch;
    watch.deadline = timeoutMs > 0 ? this.clock.now() + timeoutMs : Number.POSITIVE_INFINITY;
    watch.timedOut = false;
    watch.cancelled = false;
    watch.abandonAt = 0;
    watch.controller = undefined;
    watch.abandon = undefined;
    this.watches.push(watch);
    if (this.runSignal.aborted) this.cancel(watch, this.clock.now());
    const due = dueAt(watch);
    this.arm(due);
    // A call that is due some time keeps the process alive until then (the timer may be one armed earlier and
    // unreferenced when the run's calls last ran out).
    if (due !== Number.POSITIVE_INFINITY) this.timer?.ref();
  }

  release(watch: Watch): void {
    const { watches } = this;
    const index = watches.indexOf(watch);
    if (index < 0) return;
    const last = watches.pop() as Watch;
    if (index < watches.length) watches[index] = last;
    if (watches.length === 0) this.timer?.unref();
  }

  /** The signal a tool sees: aborted when its call times out or the run is cancelled. */
  signalFor(watch: Watch): AbortSignal {
    if (!watch.controller) {
      watch.controller = new AbortController();
      if (watch.timedOut) watch.controller.abort(timeoutError(watch));
      else if (watch.cancelled) watch.controller.abort(this.runSignal.reason);
    }
    return watch.controller.signal;
  }

  dispose(): void {
    this.disposed = true;
    this.clock.clearTimeout(this.timer);
  }

  /** The run was cancelled: every running call's signal aborts, and it is abandoned after the grace period. */
  cancelAll(): void {
    if (this.disposed) return;
    const now = this.clock.now();
    for (const watch of this.watches) this.cancel(watch, now);
    this.arm(now + this.graceMs);
  }

  private cancel(watch: Watch, now: number): void {
    if (watch.cancelled) return;
    watch.cancelled = true;
    if (watch.abandonAt === 0) watch.abandonAt = now + this.graceMs;
    watch.controller?.abort(this.runSignal.reason);
  }

  private arm(at: number): void {
    if (at >= this.armedFor) return;
    this.clock.clearTimeout(this.timer);
    this.armedFor = at;
    this.timer = this.clock.setTimeout(() => this.tick(), Math.max(0, at - this.clock.now()));
    if (this.watches.length === 0) this.timer.unref();
  }

  private tick(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    let next = Number.POSITIVE_INFINITY;
    for (const watch of this.watches) {
      if (!watch.timedOut && !watch.cancelled && now >= watch.deadline) {
        watch.timedOut = true;
        watch.abandonAt = now + this.graceMs;
        watch.controller?.abort(timeoutError(watch));
      }
      if (watch.abandonAt !== 0 && now >= watch.abandonAt) {
        watch.abandon?.();
        continue;
      }
      next = Math.min(next, dueAt(watch));
    }
    if (next !== Number.POSITIVE_INFINITY) this.arm(next);
  }
}

function dueAt(watch: Watch): number {
  return watch.abandonAt !== 0 ? watch.abandonAt : watch.deadline;
}

function timeoutError(watch: Watch): LunationError {
  return new LunationError('timeout', `The tool call timed out after ${watch.timeoutMs} ms`);
}
