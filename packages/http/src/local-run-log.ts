import type { AgentEvent, RunEventRecord } from '@lunation/contract';
import type { RunHandle } from '@lunation/runtime';

/**
 * One run's events in this process, with ids (`1`, `2`, …) that continue across its invocations. A run continued
 * after a restart (adopted) numbers its events after a prefix of this process (`k3x9.1`, `k3x9.2`, …), so they
 * never pass for the ids its log had in the process that died.
 */
export class LocalRunLog {
  readonly records: RunEventRecord[] = [];
  /** Whether the current invocation ended (`run-end` logged). */
  done = false;
  /** The id before the current invocation's `run-start`. */
  invocationStart = 0;
  private readonly waiters = new Set<() => void>();

  constructor(
    readonly runId: string,
    readonly threadId: string,
    readonly idPrefix = '',
  ) {}

  append(event: AgentEvent): void {
    if (event.type === 'run-start') {
      this.invocationStart = this.records.length;
      this.done = false;
    }
    this.records.push({ id: `${this.idPrefix}${this.records.length + 1}`, event });
    if (event.type === 'run-end') this.done = true;
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  /** The records after `after` until a `run-end`, waiting for new ones; stops early when `signal` aborts. */
  async *read(after: number, signal: AbortSignal): AsyncIterable<RunEventRecord> {
    let next = after;
    while (!signal.aborted) {
      const record = this.records[next];
      if (record) {
        next++;
        yield record;
        if (record.event.type === 'run-end') return;
        continue;
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal.removeEventListener('abort', wake);
          this.waiters.delete(wake);
          resolve();
        };
        this.waiters.add(wake);
        signal.addEventListener('abort', wake, { once: true });
      });
    }
  }
}

/**
 * The event logs of the runs this process streams, so a client can reconnect (`Last-Event-ID`) while a run is
 * active and for `retainMs` after it ended. In memory: a restart forgets them (a fleet's logs are shared).
 */
export class LocalRunLogs {
  private readonly logs = new Map<string, LocalRunLog>();
  private readonly latestByThread = new Map<string, string>();
  private readonly expiries = new Map<string, NodeJS.Timeout>();

  constructor(private readonly retainMs: number) {}

  /**
   * Logs every event of `run` from now on (the handle replays what it emitted before). `idPrefix` numbers a new
   * log's events after it (a run continued after a restart).
   */
  record(run: RunHandle, idPrefix = ''): LocalRunLog {
    let log = this.logs.get(run.runId);
    if (!log) {
      log = new LocalRunLog(run.runId, run.threadId, idPrefix);
      this.logs.set(run.runId, log);
    }
    clearTimeout(this.expiries.get(run.runId));
    this.expiries.delete(run.runId);
    this.latestByThread.set(run.threadId, run.runId);
    const target = log;
    void (async () => {
      try {
        for await (const event of run.events) target.append(event);
      } finally {
        const expiry = setTimeout(() => this.forget(target), this.retainMs);
        expiry.unref();
        this.expiries.set(target.runId, expiry);
      }
    })();
    return log;
  }

  get(runId: string): LocalRunLog | undefined {
    return this.logs.get(runId);
  }

  /** The thread's latest logged run while its current invocation runs. */
  active(threadId: string): LocalRunLog | undefined {
    const runId = this.latestByThread.get(threadId);
    const log = runId === undefined ? undefined : this.logs.get(runId);
    return log && !log.done ? log : undefined;
  }

  private forget(log: LocalRunLog): void {
    this.logs.delete(log.runId);
    this.expiries.delete(log.runId);
    if (this.latestByThread.get(log.threadId) === log.runId) this.latestByThread.delete(log.threadId);
  }
}
