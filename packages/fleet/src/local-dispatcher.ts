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
import { LocalDispatchBackend } from './local-dispatch-backend.js';
import { LocalEventSubscription } from './local-event-subscription.js';
import type { ClaimSlot, ClaimWaiter } from './local-work-queue.js';

export { LocalDispatchBackend };

/** Options of {@link LocalDispatcher}: the contract's policy, plus where the state lives. */
export interface LocalDispatcherOptions extends DispatchPolicy {
  /** Another LocalDispatcher's `backend`, to share its state. @default a new backend */
  backend?: LocalDispatchBackend;
  /** The lock of a claim made without `lockMs`. @default 30000 */
  lockMs?: number;
}

/** How long an acknowledged submission id still counts as a duplicate, by default. */
const defaultDedupeWindowMs = 10 * 60_000;
const defaultReadLimit = 1_000;

/**
 * The in-process dispatcher: per-thread inboxes, one claim per thread, retries and dead letters, cancel requests
 * and run event logs in this process's memory. Nothing survives the process; use a durable dispatcher
 * (`@lunation/dispatch-bullmq`) to spread work over processes. Submissions and events are kept by reference,
 * not copied: do not change them after handing them over.
 */
export class LocalDispatcher implements Dispatcher {
  readonly specificationVersion = 'v2' as const;
  readonly kind = 'local';
  /** The shared state; pass it as `backend` to build a sibling dispatcher. */
  readonly backend: LocalDispatchBackend;
  private readonly policy: ResolvedDispatchPolicy;
  private readonly lockMs: number;
  private readonly subscriptions = new Set<LocalEventSubscription>();
  private readonly watches = new Set<CancelWatch>();
  private closed = false;

  constructor(options: LocalDispatcherOptions = {}) {
    this.policy = resolveDispatchPolicy(options, { dedupeWindowMs: defaultDedupeWindowMs });
    this.lockMs = options.lockMs ?? 30_000;
    assertInteger(this.lockMs, 'lockMs', 1);
    this.backend = options.backend ?? new LocalDispatchBackend();
  }

  async submit(submission: Submission): Promise<SubmitResult> {
    this.assertOpen();
    assertSubmission(submission);
    return this.backend.work.submit(submission, this.policy, Date.now());
  }

  async claim(options: ClaimOptions): Promise<DispatchClaim | undefined> {
    this.assertOpen();
    assertId(options.workerId, 'workerId');
    const lockMs = options.lockMs ?? this.lockMs;
    assertInteger(lockMs, 'lockMs', 1);
    const waitMs = options.waitMs ?? 0;
    assertInteger(waitMs, 'waitMs', 0);
    const { signal } = options;
    if (signal?.aborted) return undefined;
    const request = { workerId: options.workerId, lockMs, policy: this.policy, owner: this };
    const work = this.backend.work;
    const held = work.tryClaim(request, Date.now());
    if (held !== undefined || waitMs === 0) return held?.claim;
    return new Promise((resolve) => {
      const onAbort = () => {
        if (work.unwait(waiter)) waiter.settle(undefined);
      };
      const timer = setTimeout(onAbort, waitMs);
      const waiter: ClaimWaiter = {
        ...request,
        settle(slot: ClaimSlot | undefined) {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(slot?.claim);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      work.wait(waiter, Date.now());
    });
  }

  async extend(claim: DispatchClaim, lockMs: number = this.lockMs): Promise<void> {
    assertInteger(lockMs, 'lockMs', 1);
    this.backend.work.extend(claim, lockMs, Date.now());
  }

  async pending(threadId: string): Promise<InboxEntry[]> {
    assertId(threadId, 'threadId');
    return this.backend.work.pending(threadId);
  }

  async acknowledge(threadId: string, submissionIds: readonly string[]): Promise<number> {
    assertId(threadId, 'threadId');
    if (!Array.isArray(submissionIds)) {
      throw new LunationError('invalid-argument', 'submissionIds must be an array of submission ids');
    }
    for (const id of submissionIds) assertId(id, 'submissionIds[]');
    return this.backend.work.acknowledge(threadId, submissionIds, Date.now(), this.policy.dedupeWindowMs);
  }

  async complete(claim: DispatchClaim): Promise<CompleteResult> {
    return { rewoken: this.backend.work.complete(claim, Date.now()) };
  }

  async fail(claim: DispatchClaim, error: unknown, options: FailOptions = {}): Promise<FailResult> {
    const retryable = options.retryable ?? (LunationError.isInstance(error) && error.isRetryable);
    return this.backend.work.fail(claim, toErrorInfo(error), retryable, this.policy, Date.now());
  }

  async handBack(claim: DispatchClaim, options: HandBackOptions = {}): Promise<void> {
    const delayMs = options.delayMs ?? 0;
    assertInteger(delayMs, 'delayMs', 0);
    this.backend.work.handBack(claim, delayMs, Date.now());
  }

  async depth(): Promise<DispatchDepth> {
    return this.backend.work.depth(Date.now());
  }

  async deadLetters(options: DeadLetterListOptions = {}): Promise<DeadLetter[]> {
    const limit = options.limit ?? 100;
    assertInteger(limit, 'limit', 1);
    return this.backend.work.deadLetters(limit);
  }

  async resubmit(threadId: string): Promise<boolean> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    return this.backend.work.resubmit(threadId, Date.now());
  }

  async requestCancel(input: CancelRequestInput): Promise<CancelRequest> {
    assertId(input.threadId, 'threadId');
    if (input.runId !== undefined) assertId(input.runId, 'runId');
    if (typeof input.reason !== 'string')
      throw new LunationError('invalid-argument', 'reason must be a string');
    return this.backend.cancels.request(input, Date.now());
  }

  async cancelRequest(threadId: string): Promise<CancelRequest | undefined> {
    assertId(threadId, 'threadId');
    return this.backend.cancels.get(threadId);
  }

  async watchCancel(threadId: string, listener: (request: CancelRequest) => void): Promise<CancelWatch> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    const watch = this.backend.cancels.watch(threadId, listener);
    const watches = this.watches;
    watches.add(watch);
    return {
      close() {
        watches.delete(watch);
        watch.close();
      },
    };
  }

  async clearCancel(threadId: string, requestId?: string): Promise<boolean> {
    assertId(threadId, 'threadId');
    if (requestId !== undefined) assertId(requestId, 'requestId');
    return this.backend.cancels.clear(threadId, requestId);
  }

  async appendEvents(
    runId: string,
    events: readonly AgentEvent[],
    options?: AppendEventsOptions,
  ): Promise<string[]> {
    assertId(runId, 'runId');
    const fence = assertAppendEvents(events, options);
    return this.backend.events.append(runId, events, fence, this.policy.maxEventsPerRun);
  }

  async readEvents(runId: string, options: ReadEventsOptions = {}): Promise<RunEventPage> {
    assertId(runId, 'runId');
    const after = options.after === undefined ? 0 : parseRunEventId(options.after, 'after');
    const limit = options.limit ?? defaultReadLimit;
    assertInteger(limit, 'limit', 1);
    return this.backend.events.read(runId, after, limit);
  }

  subscribeEvents(runId: string, options: SubscribeEventsOptions): AsyncIterable<RunEventRecord> {
    this.assertOpen();
    assertId(runId, 'runId');
    const after = options.after === undefined ? 0 : parseRunEventId(options.after, 'after');
    if (typeof options.signal?.aborted !== 'boolean') {
      throw new LunationError(
        'invalid-argument',
        'subscribeEvents needs a signal (an AbortSignal) to end it',
      );
    }
    const subscriptions = this.subscriptions;
    const subscription = new LocalEventSubscription(
      this.backend.events,
      runId,
      after,
      options.signal,
      (ended) => subscriptions.delete(ended),
    );
    subscriptions.add(subscription);
    return subscription;
  }

  async endEvents(runId: string, options: EndEventsOptions): Promise<void> {
    assertId(runId, 'runId');
    assertInteger(options?.ttlMs, 'ttlMs', 0);
    this.backend.events.end(runId, options.ttlMs, assertFence(options.fence));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const work = this.backend.work;
    for (const waiter of work.takeWaiters(this)) waiter.settle(undefined);
    for (const claim of work.claimsOf(this)) work.handBack(claim, 0, Date.now());
    for (const subscription of [...this.subscriptions]) subscription.close();
    for (const watch of [...this.watches]) watch.close();
  }

  private assertOpen(): void {
    if (this.closed) {
      throw new LunationError(
        'store-unavailable',
        'This LocalDispatcher is closed; create a new one (on the same backend to keep its state)',
        { retryable: false },
      );
    }
  }
}
