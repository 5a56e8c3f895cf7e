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
} from '@lunation/contract';
import { LocalDispatchBackend, LocalDispatcher } from '@lunation/fleet';
import type { FaultCounts, FaultSchedule } from './faults.js';
import { type Scheduler, type SimulatedProcess, unavailableError } from './scheduler.js';
import { DispatchFaultDraws, type DispatchFaults } from './simulated-dispatch-faults.js';

export type { DispatchFaults } from './simulated-dispatch-faults.js';

/** Why a process's connection closed (one shared reason: a DOMException of its own per crash costs a stack trace). */
const disconnected = new DOMException('This operation was aborted', 'AbortError');

/**
 * A signal aborted once `signal` or `connection` is, as `AbortSignal.any` gives, but linked only until `unlink`:
 * `AbortSignal.any` keeps every signal it made as a dependant of the connection for as long as it lives, and
 * the connection's abort then walks them all (hundreds of finished claims of a long-lived worker).
 */
class SignalLink {
  /** Aborted once a source is (the connection itself when there is no other signal). */
  readonly signal: AbortSignal;
  private readonly linked = new AbortController();
  private readonly sources: readonly AbortSignal[];

  constructor(signal: AbortSignal | undefined, connection: AbortSignal) {
    this.sources = signal === undefined ? [] : [signal, connection];
    this.signal = signal === undefined ? connection : this.linked.signal;
    const first = this.sources.find((source) => source.aborted);
    if (first !== undefined) this.linked.abort(first.reason);
    else for (const source of this.sources) source.addEventListener('abort', this, { once: true });
  }

  /** A source aborted: the linked signal aborts with its reason. */
  handleEvent(event: Event): void {
    this.linked.abort((event.target as AbortSignal).reason);
  }

  unlink(): void {
    for (const source of this.sources) source.removeEventListener('abort', this);
  }
}

/** Options of {@link SimulatedDispatcher}: the contract's policy, plus where and how it runs. */
export interface SimulatedDispatcherOptions extends DispatchPolicy {
  /** The scheduler that completes the dispatcher's calls. */
  scheduler: Scheduler;
  /** The process whose calls these are. @default the scheduler's world process */
  process?: SimulatedProcess;
  /**
   * Another SimulatedDispatcher's `backend`, to share its state. @default a new `LocalDispatchBackend` on the
   * world's clock and the scheduler's seeded ids
   */
  backend?: LocalDispatchBackend;
  /** The lock of a claim made without `lockMs`. @default 30000 */
  lockMs?: number;
  /** Faults to inject. @default none */
  faults?: DispatchFaults;
  /** Fault counts to add to (shared by siblings). @default a new record */
  faultCounts?: FaultCounts;
  /** The world's fault schedule: each fault drawn is injected only if it allows it. @default every fault */
  schedule?: FaultSchedule;
  /** Told of each claim a fault took away from its holder, with the holder's process (shared by siblings). */
  onRevoked?: (holder: SimulatedProcess, threadId: string) => void;
}

/**
 * A dispatcher for simulations: the fleet's `LocalDispatcher`, on the world's virtual clock and seeded ids, where
 * every call is an operation the scheduler completes later, in the order the seed decides, with injectable
 * faults (duplicate and late deliveries, lost claims and acknowledgements, lost or unacknowledged writes). A
 * process's calls vanish when it crashes; its claims stay until their locks run out, as an engine's would.
 * Without faults it passes the dispatch kit.
 */
export class SimulatedDispatcher implements Dispatcher {
  readonly specificationVersion = 'v3' as const;
  readonly kind = 'simulated';
  /** The shared state; pass it as `backend` to build a sibling. */
  readonly backend: LocalDispatchBackend;
  /** The scheduler that completes this dispatcher's calls. */
  readonly scheduler: Scheduler;
  /** The faults injected so far, by kind (shared with siblings made by `forProcess`). */
  readonly faultCounts: FaultCounts;
  private readonly local: LocalDispatcher;
  private readonly owner: SimulatedProcess;
  private readonly options: DispatchPolicy & { lockMs?: number };
  private readonly draws: DispatchFaultDraws;
  private readonly onRevoked: ((holder: SimulatedProcess, threadId: string) => void) | undefined;
  /** The process's connection: aborted when it crashes or closes, which ends its waits and watches. */
  private readonly connection = new AbortController();
  private readonly watches = new Set<CancelWatch>();
  private closed = false;

  constructor(options: SimulatedDispatcherOptions) {
    const { scheduler, process, backend, faults, faultCounts, schedule, onRevoked, ...policy } = options;
    this.options = policy;
    this.onRevoked = onRevoked;
    this.scheduler = scheduler;
    this.owner = process ?? scheduler.world;
    this.backend =
      backend ?? new LocalDispatchBackend({ clock: scheduler.world.clock, ids: scheduler.ids() });
    this.local = new LocalDispatcher({ ...policy, backend: this.backend, clock: this.owner.clock });
    this.faultCounts = faultCounts ?? {};
    this.draws = new DispatchFaultDraws(scheduler, faults, this.faultCounts, schedule);
    // A crashed process's connections close: its waiting claims and cancel watches go (not its claims).
    this.owner.onCrash(() => this.disconnect());
  }

  /** The same backend, used by another process (its calls vanish when it crashes). */
  forProcess(process: SimulatedProcess, faults: DispatchFaults = this.draws.faults): SimulatedDispatcher {
    return new SimulatedDispatcher({
      ...this.options,
      scheduler: this.scheduler,
      process,
      backend: this.backend,
      faults,
      faultCounts: this.faultCounts,
      schedule: this.draws.schedule,
      ...(this.onRevoked === undefined ? {} : { onRevoked: this.onRevoked }),
    });
  }

  submit(submission: Submission): Promise<SubmitResult> {
    return this.call(`submit ${submission.threadId} ${submission.id}`, 'submit', () =>
      this.local.submit(submission),
    );
  }

  claim(options: ClaimOptions): Promise<DispatchClaim | undefined> {
    const lost = this.draws.lostClaim();
    return this.call(`claim ${options.workerId}`, 'claim', async () => {
      // A claim issued before close() and applied after it takes nothing.
      if (this.closed) return undefined;
      const link = new SignalLink(options.signal, this.connection.signal);
      let claim: DispatchClaim | undefined;
      try {
        claim = await this.local.claim({ ...options, signal: link.signal });
      } finally {
        link.unlink();
      }
      if (claim === undefined) return undefined;
      const revokeInMs = this.draws.revocation(options.lockMs ?? this.options.lockMs ?? 30_000);
      if (revokeInMs !== undefined) {
        this.scheduler.world.clock.setTimeout(() => {
          if (this.backend.revokeClaim(claim.token)) this.onRevoked?.(this.owner, claim.threadId);
        }, revokeInMs);
      }
      return lost && this.draws.inject('lost-claim') ? undefined : claim;
    });
  }

  extend(claim: DispatchClaim, lockMs?: number): Promise<void> {
    return this.call(`extend ${claim.threadId}`, 'extend', () => this.local.extend(claim, lockMs));
  }

  pending(threadId: string): Promise<InboxEntry[]> {
    return this.call(`pending ${threadId}`, 'pending', () => this.local.pending(threadId));
  }

  acknowledge(threadId: string, submissionIds: readonly string[]): Promise<number> {
    const lost = this.draws.lostAcknowledgement();
    return this.call(`acknowledge ${threadId} ${submissionIds.join(',')}`, 'acknowledge', () => {
      if (lost) throw unavailableError(`dispatch.acknowledge ${threadId}`);
      return this.local.acknowledge(threadId, submissionIds);
    });
  }

  complete(claim: DispatchClaim): Promise<CompleteResult> {
    return this.call(`complete ${claim.threadId}`, 'complete', () => this.local.complete(claim));
  }

  fail(claim: DispatchClaim, error: unknown, options?: FailOptions): Promise<FailResult> {
    return this.call(`fail ${claim.threadId}`, 'fail', () => this.local.fail(claim, error, options));
  }

  handBack(claim: DispatchClaim, options?: HandBackOptions): Promise<void> {
    return this.call(`handBack ${claim.threadId}`, 'handBack', () => this.local.handBack(claim, options));
  }

  depth(): Promise<DispatchDepth> {
    return this.call('depth', 'depth', () => this.local.depth());
  }

  deadLetters(options?: DeadLetterListOptions): Promise<DeadLetter[]> {
    return this.call('deadLetters', 'deadLetters', () => this.local.deadLetters(options));
  }

  resubmit(threadId: string): Promise<boolean> {
    return this.call(`resubmit ${threadId}`, 'resubmit', () => this.local.resubmit(threadId));
  }

  requestCancel(input: CancelRequestInput): Promise<CancelRequest> {
    return this.call(`requestCancel ${input.threadId} ${input.runId ?? '-'}`, 'requestCancel', () =>
      this.local.requestCancel(input),
    );
  }

  cancelRequests(threadId: string): Promise<CancelRequest[]> {
    return this.call(`cancelRequests ${threadId}`, 'cancelRequests', () =>
      this.local.cancelRequests(threadId),
    );
  }

  watchCancel(threadId: string, listener: (request: CancelRequest) => void): Promise<CancelWatch> {
    const { owner, scheduler } = this;
    let closed = false;
    // Each delivery is a message to the watching process: an operation of its own, that a crash loses.
    const deliver = (request: CancelRequest) => {
      void scheduler
        .operation(owner, `dispatch.cancel-delivery ${threadId}`, () => {
          if (!closed) listener(request);
        })
        .catch(() => undefined);
    };
    return this.call(`watchCancel ${threadId}`, 'watchCancel', async () => {
      const watch = await this.local.watchCancel(threadId, deliver);
      const watches = this.watches;
      const handle: CancelWatch = {
        close() {
          closed = true;
          watches.delete(handle);
          watch.close();
        },
      };
      watches.add(handle);
      return handle;
    });
  }

  clearCancel(threadId: string, requestId?: string): Promise<boolean> {
    return this.call(`clearCancel ${threadId}`, 'clearCancel', () =>
      this.local.clearCancel(threadId, requestId),
    );
  }

  appendEvents(
    runId: string,
    events: readonly AgentEvent[],
    options?: AppendEventsOptions,
  ): Promise<string[]> {
    const failed = this.draws.failedAppend();
    const label = `appendEvents ${runId} ${events.length} fence=${options?.fence ?? '-'}`;
    return this.call(label, 'appendEvents', () => {
      if (failed) throw unavailableError(`dispatch.appendEvents ${runId}`);
      return this.local.appendEvents(runId, events, options);
    });
  }

  readEvents(runId: string, options?: ReadEventsOptions): Promise<RunEventPage> {
    return this.call(`readEvents ${runId} after=${options?.after ?? '0'}`, 'readEvents', () =>
      this.local.readEvents(runId, options),
    );
  }

  subscribeEvents(runId: string, options: SubscribeEventsOptions): AsyncIterable<RunEventRecord> {
    if (typeof options?.signal?.aborted !== 'boolean') {
      throw new LunationError(
        'invalid-argument',
        'subscribeEvents needs a signal (an AbortSignal) to end it',
      );
    }
    const signal = AbortSignal.any([options.signal, this.connection.signal]);
    // The arguments are checked now, as the contract asks; the records come through scheduled reads.
    void this.notices(runId, options.after ?? '0', signal).return?.();
    return this.follow(runId, options.after ?? '0', signal);
  }

  endEvents(runId: string, options: EndEventsOptions): Promise<void> {
    return this.call(`endEvents ${runId} fence=${options?.fence ?? '-'}`, 'endEvents', () =>
      this.local.endEvents(runId, options),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.disconnect();
    await this.local.close();
  }

  /**
   * Yields the run's records after `after` through scheduled reads; when caught up, waits until the run's log
   * (the shared state, at once) has a record after the last one yielded, or its end mark, then reads again.
   */
  private async *follow(runId: string, after: string, signal: AbortSignal): AsyncGenerator<RunEventRecord> {
    let position = after;
    while (!signal.aborted && !this.closed) {
      let page: RunEventPage;
      try {
        page = await this.readEvents(runId, { after: position, limit: 256 });
      } catch (error) {
        if (this.closed || signal.aborted) return; // a read issued before close(), applied after it
        throw error;
      }
      for (const record of page.events) {
        if (signal.aborted || this.closed) return;
        position = record.id;
        yield record;
      }
      if (page.ended) return;
      if (page.events.length > 0) continue;
      const notices = this.notices(runId, position, signal);
      await notices.next();
      await notices.return?.();
    }
  }

  /** The local dispatcher's own subscription after `after`: its next record says the log moved on. */
  private notices(runId: string, after: string, signal: AbortSignal): AsyncIterator<RunEventRecord> {
    return this.local.subscribeEvents(runId, { after, signal })[Symbol.asyncIterator]();
  }

  /** The process's connection closes: its waiting claims settle unanswered, its watches stop. */
  private disconnect(): void {
    this.connection.abort(disconnected);
    for (const watch of [...this.watches]) watch.close();
  }

  private call<T>(label: string, kind: string, apply: () => Promise<T>): Promise<T> {
    const name = `dispatch.${label}`;
    const { fault, delayMs } = this.draws.call(kind);
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
}
