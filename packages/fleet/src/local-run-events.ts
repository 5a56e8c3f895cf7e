import type { AgentEvent, Clock, ClockTimer, RunEventPage, RunEventRecord } from '@lunation/contract';
import { eventLogEndedError, staleEventFenceError } from '@lunation/contract/dispatch-utils';

/** One run's log: its latest records (ids consecutive from `firstId`), whether it is ended, and its expiry. */
interface RunLog {
  records: RunEventRecord[];
  /** Index of the first kept record in `records`. */
  head: number;
  lastId: number;
  ended: boolean;
  expiry: ClockTimer | undefined;
  /** The highest fence the log was given, and the seq of the last event taken under it. */
  fence: number | undefined;
  fenceSeq: number | undefined;
}

const newLog = (): RunLog => ({
  records: [],
  head: 0,
  lastId: 0,
  ended: false,
  expiry: undefined,
  fence: undefined,
  fenceSeq: undefined,
});

/**
 * The run event logs of a local dispatch backend. Events are kept by reference; a subscriber waiting for more
 * registers a wake-up callback, called once by the next append or end.
 */
export class LocalRunEvents {
  private readonly logs = new Map<string, RunLog>();
  private readonly wakers = new Map<string, Set<() => void>>();

  /** `clock` sets the timers that forget ended logs. */
  constructor(private readonly clock: Clock) {}

  /** Appends under the fencing rules of the contract's `RunEventLog`; resolves the ids of what it appended. */
  append(
    runId: string,
    events: readonly AgentEvent[],
    fence: number | undefined,
    maxEvents: number,
  ): string[] {
    let log = this.logs.get(runId);
    if (log?.ended) throw eventLogEndedError(runId);
    if (log !== undefined && fence !== undefined) this.checkFence(runId, log, fence);
    if (log === undefined) {
      log = newLog();
      this.logs.set(runId, log);
    }
    let position = fence === undefined ? undefined : log.fence === fence ? (log.fenceSeq ?? -1) : -1;
    const ids: string[] = [];
    for (const event of events) {
      if (position !== undefined) {
        if (event.seq <= position) continue;
        position = event.seq;
      }
      const id = String(++log.lastId);
      log.records.push({ id, event });
      ids.push(id);
    }
    if (fence !== undefined) {
      log.fence = fence;
      log.fenceSeq = position === -1 ? undefined : position;
    }
    if (ids.length === 0) return ids;
    const overflow = log.records.length - log.head - maxEvents;
    if (overflow > 0) {
      log.head += overflow;
      if (log.head > 1024 && log.head * 2 > log.records.length) {
        log.records = log.records.slice(log.head);
        log.head = 0;
      }
    }
    this.wake(runId);
    return ids;
  }

  /** The run's log as it is (not a copy), or undefined. */
  log(runId: string): Readonly<RunLog> | undefined {
    return this.logs.get(runId);
  }

  /** Records after id `after` (a number), at most `limit`. */
  read(runId: string, after: number, limit: number): RunEventPage {
    const log = this.logs.get(runId);
    if (log === undefined) return { events: [], ended: false };
    const kept = log.records.length - log.head;
    const firstId = log.lastId - kept + 1;
    const start = log.head + Math.max(0, Math.min(kept, after - firstId + 1));
    const end = Math.min(log.records.length, start + limit);
    return { events: log.records.slice(start, end), ended: log.ended && end === log.records.length };
  }

  end(runId: string, ttlMs: number, fence: number | undefined): void {
    let log = this.logs.get(runId);
    if (log !== undefined && fence !== undefined) this.checkFence(runId, log, fence);
    if (log === undefined) {
      log = newLog();
      this.logs.set(runId, log);
    }
    if (fence !== undefined && fence !== log.fence) {
      log.fence = fence;
      log.fenceSeq = undefined;
    }
    log.ended = true;
    this.clock.clearTimeout(log.expiry);
    const ended = log;
    log.expiry = this.clock
      .setTimeout(() => {
        if (this.logs.get(runId) === ended && ended.ended) this.logs.delete(runId);
      }, ttlMs)
      .unref();
    this.wake(runId);
  }

  private checkFence(runId: string, log: RunLog, fence: number): void {
    if (log.fence !== undefined && fence < log.fence) throw staleEventFenceError(runId, fence, log.fence);
  }

  /** Calls `waker` once, at the run's next append or end. */
  onChange(runId: string, waker: () => void): void {
    let set = this.wakers.get(runId);
    if (set === undefined) {
      set = new Set();
      this.wakers.set(runId, set);
    }
    set.add(waker);
  }

  /** Forgets a waker that was not called. */
  offChange(runId: string, waker: () => void): void {
    const set = this.wakers.get(runId);
    if (set?.delete(waker) && set.size === 0) this.wakers.delete(runId);
  }

  private wake(runId: string): void {
    const set = this.wakers.get(runId);
    if (set === undefined) return;
    this.wakers.delete(runId);
    for (const waker of set) waker();
  }
}
