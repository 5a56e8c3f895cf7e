import type { AgentEvent, RunEventPage, RunEventRecord } from '@lunation/contract';

/** One run's log: its latest records (ids consecutive from `firstId`), whether it is ended, and its expiry. */
interface RunLog {
  records: RunEventRecord[];
  /** Index of the first kept record in `records`. */
  head: number;
  lastId: number;
  ended: boolean;
  expiry: ReturnType<typeof setTimeout> | undefined;
}

/**
 * The run event logs of a local dispatch backend. Events are kept by reference; a subscriber waiting for more
 * registers a wake-up callback, called once by the next append or end.
 */
export class LocalRunEvents {
  private readonly logs = new Map<string, RunLog>();
  private readonly wakers = new Map<string, Set<() => void>>();

  append(runId: string, events: readonly AgentEvent[], maxEvents: number): string[] {
    let log = this.logs.get(runId);
    if (log === undefined) {
      log = { records: [], head: 0, lastId: 0, ended: false, expiry: undefined };
      this.logs.set(runId, log);
    } else if (log.ended) {
      log.ended = false;
      if (log.expiry !== undefined) clearTimeout(log.expiry);
      log.expiry = undefined;
    }
    const ids: string[] = [];
    for (const event of events) {
      const id = String(++log.lastId);
      log.records.push({ id, event });
      ids.push(id);
    }
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

  end(runId: string, ttlMs: number): void {
    let log = this.logs.get(runId);
    if (log === undefined) {
      log = { records: [], head: 0, lastId: 0, ended: false, expiry: undefined };
      this.logs.set(runId, log);
    }
    log.ended = true;
    if (log.expiry !== undefined) clearTimeout(log.expiry);
    const ended = log;
    log.expiry = setTimeout(() => {
      if (this.logs.get(runId) === ended && ended.ended) this.logs.delete(runId);
    }, ttlMs);
    log.expiry.unref?.();
    this.wake(runId);
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
