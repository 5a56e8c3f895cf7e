import {
  type AgentEvent,
  type AppendEventsOptions,
  type CancelRequest,
  type CancelRequestInput,
  type CancelWatch,
  type ClaimOptions,
  type CompleteResult,
  type DeadLetter,
  type DeadLetterListOptions,
  type DispatchClaim,
  type DispatchDepth,
  type Dispatcher,
  type DispatchPolicy,
  type EndEventsOptions,
  type FailOptions,
  type FailResult,
  type HandBackOptions,
  type InboxEntry,
  LunationError,
  type ReadEventsOptions,
  type RunEventPage,
  type RunEventRecord,
  type Submission,
  type SubmitResult,
  type SubscribeEventsOptions,
  toErrorInfo,
} from '@lunation/contract';
import {
  assertAppendEvents,
  assertFence,
  assertId,
  assertInteger,
  assertSubmission,
  parseRunEventId,
  type ResolvedDispatchPolicy,
  resolveDispatchPolicy,
} from '@lunation/contract/dispatch-utils';
import { type CallFaults, countFault, drawCallFault, type FaultCounts, FaultSchedule } from './faults.js';
import { type Scheduler, type SimulatedProcess, unavailableError } from './scheduler.js';
import type { SeededRandom } from './seeded-random.js';
import {
  type CancelWatcher,
  type ClaimWaiter,
  SimulatedDispatchBackend,
} from './simulated-dispatch-backend.js';

/** Faults of a {@link SimulatedDispatcher}: those of every call, plus the engine's own misdeeds. */
export interface DispatchFaults extends CallFaults {
  /**
   * A claim taken away from its holder without telling it, some time within its lock, as an engine does when it
   * wrongly judges a worker stalled: the thread is delivered again to another worker (the holder's `extend`,
   * `complete`, ... then get `claim-lost`).
   */
  duplicateDelivery?: number;
  /** A claim made in the backend whose answer is lost: the caller sees no thread; the lock runs out. */
  lostClaim?: number;
  /** An `acknowledge` lost before it applies: the caller gets `store-unavailable`, the submissions stay. */
  lostAcknowledgement?: number;
  /**
   * An `appendEvents` refused with `store-unavailable` before it applies (a log's backend timing out under load).
   * Drawn from a stream of its own, so turning it on shifts none of the seed's other faults.
   */
  failedAppend?: number;
  /**
   * A duplicate delivery within `promptRedeliveryMs` of the claim (default 50 ms): the thread goes to another worker
   * while its holder is most likely still running it. Drawn from a stream of its own, like `failedAppend`.
   */
  promptRedelivery?: number;
  /** @default 50 */
  promptRedeliveryMs?: number;
}

/** Options of {@link SimulatedDispatcher}: the contract's policy, plus where and how it runs. */
export interface SimulatedDispatcherOptions extends DispatchPolicy {
  /** The scheduler that completes the dispatcher's calls. */
  scheduler: Scheduler;
  /** The process whose calls these are. @default the scheduler's world process */
  process?: SimulatedProcess;
  /** Another SimulatedDispatcher's `backend`, to share its state. @default a new backend on the world's clock */
  backend?: SimulatedDispatchBackend;
  /** The lock of a claim made without `lockMs`. @default 30000 */
  lockMs?: number;
  /** Faults to inject. @default none */
  faults?: DispatchFaults;
  /** Fault counts to add to (shared by siblings). @default a new record */
  faultCounts?: FaultCounts;
  /** The world's fault schedule: each fault drawn is injected only if it allows it. @default every fault */
  schedule?: FaultSchedule;
}

const defaultDedupeWindowMs = 10 * 60_000;
const writes = new Set([
  'submit',
  'extend',
  'acknowledge',
  'complete',
  'fail',
  'handBack',
  'resubmit',
  'requestCancel',
  'clearCancel',
  'appendEvents',
  'endEvents',
]);

/**
 * A dispatcher for simulations: the local dispatcher's semantics on the world's virtual clock, where every call is
 * an operation the scheduler completes later, in the order the seed decides, with injectable faults (duplicate
 * and late deliveries, lost claims and acknowledgements, lost or unacknowledged writes). Without faults it passes
 * the dispatch kit.
 */
export class SimulatedDispatcher implements Dispatcher {
  readonly specificationVersion = 'v3' as const;
  readonly kind = 'simulated';
  /** The shared state; pass it as `backend` to build a sibling. */
  readonly backend: SimulatedDispatchBackend;
  /** The scheduler that completes this dispatcher's calls. */
  readonly scheduler: Scheduler;
  /** The faults injected so far, by kind (shared with siblings made by `forProcess`). */
  readonly faultCounts: FaultCounts;
  private readonly owner: SimulatedProcess;
  private readonly policy: ResolvedDispatchPolicy;
  private readonly options: DispatchPolicy;
  private readonly lockMs: number;
  private readonly faults: DispatchFaults;
  private readonly random: SeededRandom;
  private readonly schedule: FaultSchedule;
  private readonly appendRandom: SeededRandom;
  private readonly redeliveryRandom: SeededRandom;
  private readonly watches = new Set<CancelWatcher>();
  private readonly closers = new Set<() => void>();
  private closed = false;

  constructor(options: SimulatedDispatcherOptions) {
    const { scheduler, process, backend, lockMs, faults, faultCounts, schedule, ...policy } = options;
    this.options = policy;
    this.policy = resolveDispatchPolicy(policy, { dedupeWindowMs: defaultDedupeWindowMs });
    this.lockMs = lockMs ?? 30_000;
    assertInteger(this.lockMs, 'lockMs', 1);
    this.scheduler = scheduler;
    this.owner = process ?? scheduler.world;
    this.backend = backend ?? new SimulatedDispatchBackend(scheduler.world.clock, scheduler.ids());
    this.faults = faults ?? {};
    this.faultCounts = faultCounts ?? {};
    this.random = scheduler.stream('dispatch-faults');
    this.schedule = schedule ?? new FaultSchedule();
    this.appendRandom = scheduler.stream('dispatch-append-faults');
    this.redeliveryRandom = scheduler.stream('dispatch-redelivery-faults');
    // A crashed process's connections close: its waiting claims and cancel watches go (its claims stay until
    // their locks run out, as an engine's would).
    this.owner.onCrash(() => {
      this.backend.takeWaiters(this);
      for (const watcher of this.watches) {
        watcher.closed = true;
        this.backend.unwatch(watcher);
      }
      this.watches.clear();
    });
  }

  /** The same backend, used by another process (its calls vanish when it crashes). */
  forProcess(process: SimulatedProcess, faults: DispatchFaults = this.faults): SimulatedDispatcher {
    return new SimulatedDispatcher({
      ...this.options,
      scheduler: this.scheduler,
      process,
      backend: this.backend,
      lockMs: this.lockMs,
      faults,
      faultCounts: this.faultCounts,
      schedule: this.schedule,
    });
  }

  submit(submission: Submission): Promise<SubmitResult> {
    return this.call(`submit ${submission.threadId} ${submission.id}`, 'submit', () => {
      this.assertOpen();
      assertSubmission(submission);
      return this.backend.submit(submission, this.policy);
    });
  }

  claim(options: ClaimOptions): Promise<DispatchClaim | undefined> {
    try {
      this.assertOpen();
      assertId(options.workerId, 'workerId');
      assertInteger(options.lockMs ?? this.lockMs, 'lockMs', 1);
      assertInteger(options.waitMs ?? 0, 'waitMs', 0);
    } catch (error) {
      return Promise.reject(error);
    }
    const lockMs = options.lockMs ?? this.lockMs;
    const waitMs = options.waitMs ?? 0;
    const { signal } = options;
    if (signal?.aborted) return Promise.resolve(undefined);
    const request = { workerId: options.workerId, lockMs, policy: this.policy, owner: this };
    const lost = this.random.chance(this.faults.lostClaim ?? 0);
    return this.call(`claim ${options.workerId}`, 'claim', () => {
      const deliver = (claim: DispatchClaim | undefined): DispatchClaim | undefined => {
        if (claim === undefined) return undefined;
        this.maybeRevoke(claim, lockMs);
        return lost && this.inject('lost-claim') ? undefined : claim;
      };
      // A claim issued before close() and applied after it takes nothing.
      if (this.closed) return undefined;
      const held = this.backend.tryClaim(request);
      if (held !== undefined || waitMs === 0) return deliver(held);
      return new Promise<DispatchClaim | undefined>((resolve) => {
        const clock = this.owner.clock;
        const stop = () => {
          if (this.backend.unwait(waiter)) waiter.settle(undefined);
        };
        const timer = clock.setTimeout(stop, waitMs);
        const waiter: ClaimWaiter = {
          ...request,
          settle: (claim) => {
            clock.clearTimeout(timer);
            signal?.removeEventListener('abort', stop);
            this.closers.delete(stop);
            resolve(deliver(claim));
          },
        };
        signal?.addEventListener('abort', stop, { once: true });
        this.closers.add(stop);
        this.backend.wait(waiter);
      });
    });
  }

  extend(claim: DispatchClaim, lockMs?: number): Promise<void> {
    return this.call(`extend ${claim.threadId}`, 'extend', () => {
      if (lockMs !== undefined) assertInteger(lockMs, 'lockMs', 1);
      this.backend.extend(claim, lockMs);
    });
  }

  pending(threadId: string): Promise<InboxEntry[]> {
    return this.call(`pending ${threadId}`, 'pending', () => {
      assertId(threadId, 'threadId');
      return this.backend.pending(threadId);
    });
  }

  acknowledge(threadId: string, submissionIds: readonly string[]): Promise<number> {
    const lost =
      this.random.chance(this.faults.lostAcknowledgement ?? 0) && this.inject('lost-acknowledgement');
    return this.call(`acknowledge ${threadId} ${submissionIds.join(',')}`, 'acknowledge', () => {
      assertId(threadId, 'threadId');
      if (!Array.isArray(submissionIds)) {
        throw new LunationError('invalid-argument', 'submissionIds must be an array of submission ids');
      }
      for (const id of submissionIds) assertId(id, 'submissionIds[]');
      if (lost) throw unavailableError(`dispatch.acknowledge ${threadId}`);
      return this.backend.acknowledge(threadId, submissionIds, this.policy.dedupeWindowMs);
    });
  }

  complete(claim: DispatchClaim): Promise<CompleteResult> {
    return this.call(`complete ${claim.threadId}`, 'complete', () => ({
      rewoken: this.backend.complete(claim),
    }));
  }

  fail(claim: DispatchClaim, error: unknown, options: FailOptions = {}): Promise<FailResult> {
    const retryable = options.retryable ?? (LunationError.isInstance(error) && error.isRetryable);
    return this.call(`fail ${claim.threadId}`, 'fail', () =>
      this.backend.fail(claim, toErrorInfo(error), retryable, this.policy),
    );
  }

  handBack(claim: DispatchClaim, options: HandBackOptions = {}): Promise<void> {
    return this.call(`handBack ${claim.threadId}`, 'handBack', () => {
      const delayMs = options.delayMs ?? 0;
      assertInteger(delayMs, 'delayMs', 0);
      this.backend.handBack(claim, delayMs);
    });
  }

  depth(): Promise<DispatchDepth> {
    return this.call('depth', 'depth', () => this.backend.depth());
  }

  deadLetters(options: DeadLetterListOptions = {}): Promise<DeadLetter[]> {
    return this.call('deadLetters', 'deadLetters', () => {
      const limit = options.limit ?? 100;
      assertInteger(limit, 'limit', 1);
      return this.backend.deadLetters(limit);
    });
  }

  resubmit(threadId: string): Promise<boolean> {
    return this.call(`resubmit ${threadId}`, 'resubmit', () => {
      this.assertOpen();
      assertId(threadId, 'threadId');
      return this.backend.resubmit(threadId);
    });
  }

  requestCancel(input: CancelRequestInput): Promise<CancelRequest> {
    return this.call(`requestCancel ${input.threadId} ${input.runId ?? '-'}`, 'requestCancel', () => {
      assertId(input.threadId, 'threadId');
      if (input.runId !== undefined) assertId(input.runId, 'runId');
      if (typeof input.reason !== 'string') {
        throw new LunationError('invalid-argument', 'reason must be a string');
      }
      return this.backend.requestCancel(input);
    });
  }

  cancelRequests(threadId: string): Promise<CancelRequest[]> {
    return this.call(`cancelRequests ${threadId}`, 'cancelRequests', () => {
      assertId(threadId, 'threadId');
      return this.backend.cancelRequests(threadId);
    });
  }

  watchCancel(threadId: string, listener: (request: CancelRequest) => void): Promise<CancelWatch> {
    return this.call(`watchCancel ${threadId}`, 'watchCancel', () => {
      this.assertOpen();
      assertId(threadId, 'threadId');
      const owner = this.owner;
      const scheduler = this.scheduler;
      const watcher: CancelWatcher = {
        threadId,
        seen: new Set(),
        closed: false,
        // Each delivery is a message to the watching process: an operation of its own, that a crash loses.
        deliver(request) {
          void scheduler
            .operation(owner, `dispatch.cancel-delivery ${threadId}`, () => {
              if (watcher.closed || watcher.seen.has(request.id)) return;
              watcher.seen.add(request.id);
              listener(request);
            })
            .catch(() => undefined);
        },
      };
      this.backend.watch(watcher);
      this.watches.add(watcher);
      return {
        close: () => {
          watcher.closed = true;
          this.watches.delete(watcher);
          this.backend.unwatch(watcher);
        },
      };
    });
  }

  clearCancel(threadId: string, requestId?: string): Promise<boolean> {
    return this.call(`clearCancel ${threadId}`, 'clearCancel', () => {
      assertId(threadId, 'threadId');
      if (requestId !== undefined) assertId(requestId, 'requestId');
      return this.backend.clearCancel(threadId, requestId);
    });
  }

  appendEvents(
    runId: string,
    events: readonly AgentEvent[],
    options?: AppendEventsOptions,
  ): Promise<string[]> {
    const failed = this.appendRandom.chance(this.faults.failedAppend ?? 0) && this.inject('failed-append');
    return this.call(
      `appendEvents ${runId} ${events.length} fence=${options?.fence ?? '-'}`,
      'appendEvents',
      () => {
        assertId(runId, 'runId');
        const fence = assertAppendEvents(events, options);
        if (failed) throw unavailableError(`dispatch.appendEvents ${runId}`);
        return this.backend.appendEvents(runId, events, fence, this.policy.maxEventsPerRun);
      },
    );
  }

  readEvents(runId: string, options: ReadEventsOptions = {}): Promise<RunEventPage> {
    return this.call(`readEvents ${runId} after=${options.after ?? '0'}`, 'readEvents', () => {
      assertId(runId, 'runId');
      const after = options.after === undefined ? 0 : parseRunEventId(options.after, 'after');
      const limit = options.limit ?? 1_000;
      assertInteger(limit, 'limit', 1);
      return this.backend.readEvents(runId, after, limit);
    });
  }

  subscribeEvents(runId: string, options: SubscribeEventsOptions): AsyncIterable<RunEventRecord> {
    this.assertOpen();
    assertId(runId, 'runId');
    const after = options.after === undefined ? 0 : parseRunEventId(options.after, 'after');
    const { signal } = options;
    if (typeof signal?.aborted !== 'boolean') {
      throw new LunationError(
        'invalid-argument',
        'subscribeEvents needs a signal (an AbortSignal) to end it',
      );
    }
    return this.follow(runId, after, signal);
  }

  endEvents(runId: string, options: EndEventsOptions): Promise<void> {
    return this.call(`endEvents ${runId} fence=${options?.fence ?? '-'}`, 'endEvents', () => {
      assertId(runId, 'runId');
      assertInteger(options?.ttlMs, 'ttlMs', 0);
      this.backend.endEvents(runId, options.ttlMs, assertFence(options.fence));
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const waiter of this.backend.takeWaiters(this)) waiter.settle(undefined);
    for (const claim of this.backend.claimsOf(this)) this.backend.handBack(claim, 0);
    for (const watcher of [...this.watches]) {
      watcher.closed = true;
      this.backend.unwatch(watcher);
    }
    this.watches.clear();
    for (const close of [...this.closers]) close();
  }

  private async *follow(runId: string, after: number, signal: AbortSignal): AsyncGenerator<RunEventRecord> {
    let position = after;
    while (!signal.aborted && !this.closed) {
      let wake: () => void = () => undefined;
      const changed = new Promise<void>((resolve) => {
        wake = resolve;
      });
      this.backend.onChange(runId, wake);
      signal.addEventListener('abort', wake, { once: true });
      this.closers.add(wake);
      try {
        const page = await this.readEvents(runId, { after: String(position), limit: 256 });
        for (const record of page.events) {
          if (signal.aborted || this.closed) return;
          position = Number(record.id);
          yield record;
        }
        if (page.ended) return;
        if (page.events.length === 0) await changed;
      } finally {
        this.backend.offChange(runId, wake);
        signal.removeEventListener('abort', wake);
        this.closers.delete(wake);
      }
    }
  }

  /** With the duplicate-delivery fault, takes the claim away some time within its lock. */
  private maybeRevoke(claim: DispatchClaim, lockMs: number): void {
    if (this.redeliveryRandom.chance(this.faults.promptRedelivery ?? 0)) {
      // Drawn whether or not the schedule injects it, so turning it off shifts no other draw.
      const delayMs = this.redeliveryRandom.int(
        0,
        Math.min(lockMs - 1, this.faults.promptRedeliveryMs ?? 50),
      );
      if (this.inject('prompt-redelivery')) {
        this.scheduler.world.clock.setTimeout(() => {
          this.backend.revoke(claim.token);
        }, delayMs);
      }
      return;
    }
    if (!this.random.chance(this.faults.duplicateDelivery ?? 0) || !this.inject('duplicate-delivery')) return;
    this.scheduler.world.clock.setTimeout(
      () => {
        this.backend.revoke(claim.token);
      },
      this.random.int(0, lockMs - 1),
    );
  }

  /** Puts a drawn fault to the schedule; counts it when injected. */
  private inject(kind: string): boolean {
    if (!this.schedule.allows(`dispatch.${kind}`)) return false;
    countFault(this.faultCounts, kind);
    return true;
  }

  private call<T>(label: string, kind: string, apply: () => T | Promise<T>): Promise<T> {
    const name = `dispatch.${label}`;
    const { fault, delayMs } = drawCallFault(this.random, this.faults, writes.has(kind), (drawn) =>
      this.inject(drawn),
    );
    return this.scheduler.operation(
      this.owner,
      name,
      async () => {
        if (fault === 'unavailable' || fault === 'lost-write') throw unavailableError(name);
        const result = await apply();
        if (fault === 'unacknowledged-write') throw unavailableError(name);
        return result;
      },
      { delayMs },
    );
  }

  private assertOpen(): void {
    if (this.closed) {
      throw new LunationError(
        'store-unavailable',
        'This SimulatedDispatcher is closed; create a new one (on the same backend to keep its state)',
        { retryable: false },
      );
    }
  }
}
