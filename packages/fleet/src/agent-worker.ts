import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import {
  assertSpecificationVersion,
  type Clock,
  type ClockTimer,
  type DispatchBackoff,
  type DispatchClaim,
  type Dispatcher,
  type InboxEntry,
  LunationError,
  type LunationStore,
  systemClock,
} from '@lunation/contract';
import type { AgentRuntime } from '@lunation/runtime';
import type { RunExecutor, ScanPosition } from '@lunation/runtime/executor';
import { ClaimRetries } from './claim-retries.js';
import { submitStrandedRuns } from './stranded-runs.js';
import { ThreadWork, type ThreadWorkFact, type ThreadWorkOutcome } from './thread-work.js';
import { errorFields, type WorkerLogEntry } from './worker-log.js';

/** What {@link AgentWorker} takes. */
export interface AgentWorkerOptions {
  /** The runtime that runs the threads; it must have the store every worker and client shares. */
  runtime: AgentRuntime;
  /** Where submissions come from and run events go. */
  dispatcher: Dispatcher;
  /** Names this worker in claims. @default `<hostname>:<pid>` */
  workerId?: string;
  /** Threads worked on at once. @default 4 */
  concurrency?: number;
  /**
   * How long a claim holds without renewal; the worker extends it every third of that. A dead worker's threads
   * go to another worker once its claims lapse, so this bounds (with the thread lease) how long they wait.
   * @default 2000
   */
  claimLockMs?: number;
  /** How long one wait for work lasts before the worker asks again. @default 1000 */
  idleWaitMs?: number;
  /** How long a finished run's event log stays readable. @default 600000 */
  eventTtlMs?: number;
  /**
   * How often the worker looks for stranded runs — `running` in the store with no process holding their thread
   * and nothing queued to continue them — and files a `continue` for each (`0`: never; the first look is at
   * start). @default 60000
   */
  strandedScanIntervalMs?: number;
  /** How many threads one look for stranded runs reads at most. @default 1000 */
  strandedScanLimit?: number;
  /**
   * The back-off of a thread whose work failed with a retryable error (the store unavailable, a timeout): an
   * infrastructure failure, not the submission's, so the claim is handed back without counting toward the
   * dispatcher's `maxAttempts` and offered again after `initialMs * factor^(n - 1)` (with jitter, at most
   * `maxMs`) for its n-th such failure in a row. @default { initialMs: 500, factor: 2, maxMs: 30000 }
   */
  retryBackoff?: DispatchBackoff;
  /** A submission the runtime refused as malformed (it is acknowledged and dropped). @default ignored */
  onRejected?(entry: InboxEntry, error: LunationError): void;
  /** A failure of the worker's own bookkeeping (extending a claim, a failed claim call). @default ignored */
  onError?(error: unknown): void;
  /**
   * Told what the worker does, one structured entry per fact (see {@link WorkerLogEntry}): claims taken, handed
   * back, completed, failed and dead-lettered, runs started (new, resumed, recovered) and ended, leases lost,
   * stranded runs filed, failed event appends — with the ids the run timeline shows (run, lease token, lease owner
   * and incarnation). Must not throw. @default nothing is reported
   */
  log?(entry: WorkerLogEntry): void;
  /**
   * Where the worker reads time and sets its timers (claim keep-alive, stranded-run scans, pauses, event-append
   * back-off, log expiry checks); a simulation passes a virtual clock. @default systemClock
   */
  clock?: Clock;
}

/** What {@link AgentWorker.stop} takes. */
export interface StopWorkerOptions {
  /** How long to wait for the threads being worked on to finish. @default 30000 */
  deadlineMs?: number;
}

/**
 * Executes a fleet's runs: claims threads with work from the dispatcher, runs their submissions with the
 * runtime under each thread's lease, copies every run's events to the dispatcher's log, and acts on cancel
 * requests. Any number of workers, in any number of processes, share one store and one dispatcher; a worker that
 * dies loses its claims (the engine hands the thread to another worker) and its leases (the next worker takes
 * the thread once the lease is free), and the store's ledger keeps every finished tool from running again.
 */
export class AgentWorker {
  readonly workerId: string;
  private readonly store: LunationStore;
  private readonly executor: RunExecutor;
  private readonly concurrency: number;
  private readonly claimLockMs: number;
  private readonly idleWaitMs: number;
  private readonly eventTtlMs: number;
  private readonly strandedScanIntervalMs: number;
  private readonly stopping = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private readonly clock: Clock;
  private strandedScan: ClockTimer | undefined;
  /** Where the next stranded-runs scan starts: each scan goes on where the last stopped. */
  private readonly strandedPosition: ScanPosition = {};
  private readonly working = new Map<string, Promise<void>>();
  private readonly retries: ClaimRetries;

  constructor(private readonly options: AgentWorkerOptions) {
    const { runtime } = options;
    if (runtime.store === undefined) {
      throw new LunationError(
        'invalid-argument',
        'An AgentWorker needs a runtime with a store: workers and clients share threads only through it',
      );
    }
    assertSpecificationVersion('dispatcher', options.dispatcher, `dispatcher "${options.dispatcher.kind}"`);
    this.store = runtime.store;
    this.executor = runtime.executor;
    this.clock = options.clock ?? systemClock;
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}`;
    this.concurrency = positive(options.concurrency ?? 4, 'concurrency');
    this.claimLockMs = positive(options.claimLockMs ?? 2_000, 'claimLockMs');
    this.idleWaitMs = positive(options.idleWaitMs ?? 1_000, 'idleWaitMs');
    this.eventTtlMs = positive(options.eventTtlMs ?? 600_000, 'eventTtlMs');
    this.strandedScanIntervalMs = options.strandedScanIntervalMs ?? 60_000;
    if (this.strandedScanIntervalMs !== 0) positive(this.strandedScanIntervalMs, 'strandedScanIntervalMs');
    positive(options.strandedScanLimit ?? 1_000, 'strandedScanLimit');
    this.retries = new ClaimRetries(options.retryBackoff);
    // Every claim loop waits on the stop signal at once (a listener each while it waits for work).
    setMaxListeners(this.concurrency * 2 + 10, this.stopping.signal);
  }

  /** Starts claiming work (`concurrency` threads at once). */
  start(): this {
    if (this.loops.length > 0 || this.stopping.signal.aborted) return this;
    for (let slot = 0; slot < this.concurrency; slot++) this.loops.push(this.claimLoop());
    if (this.strandedScanIntervalMs > 0) this.scanForStrandedRuns(0);
    return this;
  }

  /**
   * Files a `continue` for each stranded run: `running` in the store while no process holds its thread (see
   * `strandedScanIntervalMs`, which does this on a timer). Resolves the threads it filed.
   */
  async resumeStrandedRuns(): Promise<string[]> {
    const { dispatcher, strandedScanLimit } = this.options;
    const filed = await submitStrandedRuns({
      store: this.store,
      dispatcher,
      scanLimit: strandedScanLimit ?? 1_000,
      position: this.strandedPosition,
    });
    for (const threadId of filed) {
      this.log({
        level: 'info',
        event: 'stranded-run-filed',
        message: `Filed a continue for the stranded run of thread "${threadId}"`,
        threadId,
      });
    }
    return filed;
  }

  private scanForStrandedRuns(delayMs: number): void {
    this.strandedScan = this.clock
      .setTimeout(() => {
        this.resumeStrandedRuns()
          .catch((error: unknown) => this.report(error))
          .finally(() => {
            if (!this.stopping.signal.aborted) this.scanForStrandedRuns(this.strandedScanIntervalMs);
          });
      }, delayMs)
      .unref();
  }

  /** Threads this worker is working on now. */
  activeThreads(): string[] {
    return [...this.working.keys()];
  }

  /**
   * Stops claiming and waits up to `deadlineMs` for the threads being worked on. Resolves with the threads still
   * running then: a process that exits leaves them to the fleet, which continues them from the store as after a
   * crash (their claims and leases lapse; finished tools do not run again).
   */
  async stop(options: StopWorkerOptions = {}): Promise<string[]> {
    this.stopping.abort();
    this.clock.clearTimeout(this.strandedScan);
    const deadlineMs = options.deadlineMs ?? 30_000;
    let timer: ClockTimer | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = this.clock.setTimeout(resolve, deadlineMs);
    });
    await Promise.race([Promise.allSettled(this.loops), deadline]);
    this.clock.clearTimeout(timer);
    return this.activeThreads();
  }

  private async claimLoop(): Promise<void> {
    const { dispatcher } = this.options;
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      let claim: DispatchClaim | undefined;
      try {
        claim = await dispatcher.claim({
          workerId: this.workerId,
          lockMs: this.claimLockMs,
          waitMs: this.idleWaitMs,
          signal,
        });
      } catch (error) {
        this.report(error);
        await this.clock.sleep(this.idleWaitMs, signal).catch(() => undefined); // a stop ends the pause
        continue;
      }
      if (claim === undefined) continue;
      this.logClaim(claim, {
        level: 'info',
        event: 'claim-taken',
        message: `Claimed thread "${claim.threadId}" (attempt ${claim.attempt})`,
      });
      const work = this.work(claim);
      this.working.set(claim.threadId, work);
      await work;
      this.working.delete(claim.threadId);
    }
  }

  /** Works on one claimed thread, keeping the claim alive, then completes, hands back or fails it. */
  private async work(claim: DispatchClaim): Promise<void> {
    const { dispatcher } = this.options;
    const keepAlive = this.clock.setInterval(
      () => {
        dispatcher.extend(claim, this.claimLockMs).catch((error: unknown) => this.report(error));
      },
      Math.max(50, Math.floor(this.claimLockMs / 3)),
    );
    try {
      const work = new ThreadWork(
        {
          executor: this.executor,
          store: this.store,
          dispatcher,
          eventTtlMs: this.eventTtlMs,
          claimLockMs: this.claimLockMs,
          clock: this.clock,
          onRejected: (entry, error) => this.options.onRejected?.(entry, error),
          report: (fact) => this.logClaim(claim, fact),
        },
        claim,
      );
      await this.settle(claim, await work.run());
    } catch (error) {
      await this.failed(claim, error);
    } finally {
      this.clock.clearInterval(keepAlive);
    }
  }

  /** Hands the claim back (the thread is held elsewhere) or completes it (its inbox is empty). */
  private async settle(claim: DispatchClaim, outcome: ThreadWorkOutcome): Promise<void> {
    const { dispatcher } = this.options;
    this.retries.succeeded(claim.threadId);
    if (outcome.type === 'busy') {
      await dispatcher.handBack(claim, { delayMs: outcome.retryAfterMs });
      this.logClaim(claim, {
        level: 'info',
        event: 'claim-handed-back',
        message: `Handed thread "${claim.threadId}" back: another process holds its lease`,
        delayMs: outcome.retryAfterMs,
      });
      return;
    }
    await dispatcher.complete(claim);
    this.logClaim(claim, {
      level: 'debug',
      event: 'claim-completed',
      message: `Completed the claim of thread "${claim.threadId}": its inbox is empty`,
    });
  }

  /**
   * The work failed: a retryable failure (the infrastructure's) hands the claim back after a back-off, uncounted;
   * any other is the submission's, and fails the claim (retried or dead-lettered); a claim that lapsed is only
   * reported.
   */
  private async failed(claim: DispatchClaim, error: unknown): Promise<void> {
    // A claim that lapsed (a stall, a slow extend) is not the work's failure: whoever holds it now goes on.
    if (LunationError.hasCode(error, 'claim-lost')) {
      this.report(error);
      return;
    }
    if (LunationError.isInstance(error) && error.isRetryable) {
      await this.retryLater(claim, error);
      return;
    }
    const failed = await this.options.dispatcher
      .fail(claim, error, LunationError.isInstance(error) ? { retryable: false } : {})
      .catch((failure: unknown) => this.report(failure));
    if (!failed) return;
    this.logClaim(claim, {
      level: 'error',
      ...(failed.deadLettered
        ? {
            event: 'claim-dead-lettered',
            message: `Thread "${claim.threadId}" dead-lettered after attempt ${claim.attempt}: ${errorFields(error).error}`,
          }
        : {
            event: 'claim-failed',
            message: `Work on thread "${claim.threadId}" failed (attempt ${claim.attempt}; retried): ${errorFields(error).error}`,
            ...(failed.retryAt === undefined ? {} : { retryAt: failed.retryAt }),
          }),
      ...errorFields(error),
    });
  }

  /** Hands the claim back after the thread's back-off: a store that stays down is neither hot-looped nor fatal. */
  private async retryLater(claim: DispatchClaim, error: LunationError): Promise<void> {
    const delayMs = this.retries.delayAfterFailure(claim, error.retryAfterMs);
    try {
      await this.options.dispatcher.handBack(claim, { delayMs });
    } catch (failure) {
      this.report(failure); // the claim lapses: it is offered again, still uncounted
      return;
    }
    this.logClaim(claim, {
      level: 'warn',
      event: 'claim-failed',
      message: `Work on thread "${claim.threadId}" failed with a retryable error (not counted toward its attempts; retried in ${delayMs} ms): ${errorFields(error).error}`,
      delayMs,
      ...errorFields(error),
    });
  }

  private logClaim(claim: DispatchClaim, fact: ThreadWorkFact): void {
    this.log({
      ...fact,
      threadId: claim.threadId,
      ...(claim.resourceId === undefined ? {} : { resourceId: claim.resourceId }),
      attempt: claim.attempt,
    });
  }

  private log(fact: ThreadWorkFact): void {
    const log = this.options.log;
    if (log === undefined) return;
    const incarnation = this.executor.incarnation;
    try {
      log({
        ...fact,
        workerId: this.workerId,
        owner: this.executor.owner,
        ...(incarnation === undefined ? {} : { incarnation }),
      });
    } catch (error) {
      this.options.onError?.(error);
    }
  }

  private report(error: unknown): void {
    if (LunationError.hasCode(error, 'claim-lost')) return; // the thread went to another worker: its lease decides
    this.options.onError?.(error);
  }
}

function positive(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new LunationError(
      'invalid-argument',
      `AgentWorker option "${name}" must be a positive integer, got ${value}`,
    );
  }
  return value;
}
