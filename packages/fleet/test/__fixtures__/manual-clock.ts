import { type Clock, type ClockTimer, type IdSource, sleepOn } from '@lunation/contract';

class ManualTimer implements ClockTimer {
  cleared = false;
  constructor(
    readonly callback: () => void,
    public dueAt: number,
    readonly everyMs: number | undefined,
  ) {}

  unref(): ClockTimer {
    return this;
  }

  ref(): ClockTimer {
    return this;
  }
}

/** A {@link Clock} that moves only when a test calls `advance`: its timers fire then, in due order. */
export class ManualClock implements Clock {
  private time: number;
  private readonly timers: ManualTimer[] = [];

  constructor(start = 1_000_000) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  monotonic(): number {
    return this.time;
  }

  setTimeout(callback: () => void, ms: number): ClockTimer {
    return this.add(new ManualTimer(callback, this.time + Math.max(0, ms), undefined));
  }

  setInterval(callback: () => void, ms: number): ClockTimer {
    return this.add(new ManualTimer(callback, this.time + Math.max(1, ms), Math.max(1, ms)));
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    if (timer instanceof ManualTimer) timer.cleared = true;
  }

  clearInterval(timer: ClockTimer | undefined): void {
    this.clearTimeout(timer);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  /** Timers set and not yet fired or cleared. */
  get pending(): number {
    return this.timers.filter((timer) => !timer.cleared).length;
  }

  /** Moves time on by `ms`, firing each timer due meanwhile at its due time. */
  advance(ms: number): void {
    const until = this.time + ms;
    for (let next = this.due(until); next !== undefined; next = this.due(until)) {
      this.time = Math.max(this.time, next.dueAt);
      if (next.everyMs === undefined) next.cleared = true;
      else next.dueAt += next.everyMs;
      next.callback();
    }
    this.time = until;
  }

  private add(timer: ManualTimer): ClockTimer {
    this.timers.push(timer);
    return timer;
  }

  private due(until: number): ManualTimer | undefined {
    let first: ManualTimer | undefined;
    for (const timer of this.timers) {
      if (!timer.cleared && timer.dueAt <= until && (first === undefined || timer.dueAt < first.dueAt)) {
        first = timer;
      }
    }
    return first;
  }
}

/** An {@link IdSource} counting up from `prefix-1`, with a fixed "random" number. */
export function countingIds(prefix: string): IdSource {
  let counter = 0;
  return { id: () => `${prefix}-${++counter}`, random: () => 0.5 };
}
