import {
  type AgentEvent,
  type CancelRequest,
  type CancelRequestInput,
  type CancelWatch,
  type Clock,
  type CompleteResult,
  type DeadLetter,
  type DispatchClaim,
  type DispatchDepth,
  type DispatchPolicy,
  type FailOptions,
  type FailResult,
  type InboxEntry,
  LunationError,
  type RunEventPage,
  type RunEventRecord,
  type Submission,
  type SubmitResult,
  toErrorInfo,
} from '@lunation/contract';
import {
  assertInteger,
  type CheckedClaimOptions,
  type DispatchBackend,
  type ResolvedDispatchPolicy,
  resolveDispatchPolicy,
} from '@lunation/contract/dispatch-utils';
import type { LocalDispatchBackend } from './local-dispatch-backend.js';
import { LocalEventSubscription } from './local-event-subscription.js';
import type { ClaimSlot, ClaimWaiter } from './local-work-queue.js';

/** How long an acknowledged submission id still counts as a duplicate, by default. */
const defaultDedupeWindowMs = 10 * 60_000;

/**
 * The operations of one `LocalDispatcher` on the state it shares with its siblings: `CheckedDispatcher` checks
 * their arguments and the closed state first. Its claims, waiting claims, subscriptions and cancel watches are its
 * own: closing it hands its claims back and ends the rest, and leaves the shared state to its siblings.
 */
export class LocalDispatchOperations implements DispatchBackend {
  readonly kind = 'local';
  private readonly policy: ResolvedDispatchPolicy;
  private readonly subscriptions = new Set<LocalEventSubscription>();
  private readonly watches = new Set<CancelWatch>();

  constructor(
    private readonly state: LocalDispatchBackend,
    policy: DispatchPolicy,
    private readonly lockMs: number,
    /** This dispatcher's own timers (claim waits); the shared state keeps its times on its own clock. */
    private readonly clock: Clock,
  ) {
    this.policy = resolveDispatchPolicy(policy, { dedupeWindowMs: defaultDedupeWindowMs });
    assertInteger(lockMs, 'lockMs', 1);
  }

  async submit(submission: Submission): Promise<SubmitResult> {
    return this.state.work.submit(submission, this.policy, this.state.clock.now());
  }

  async claim(options: CheckedClaimOptions): Promise<DispatchClaim | undefined> {
    const { signal, waitMs } = options;
    const request = {
      workerId: options.workerId,
      lockMs: options.lockMs ?? this.lockMs,
      policy: this.policy,
    };
    const work = this.state.work;
    const held = work.tryClaim({ ...request, owner: this }, this.state.clock.now());
    if (held !== undefined || waitMs === 0) return held?.claim;
    return new Promise((resolve) => {
      const onAbort = () => {
        if (work.unwait(waiter)) waiter.settle(undefined);
      };
      const timer = this.clock.setTimeout(onAbort, waitMs);
      const clock = this.clock;
      const waiter: ClaimWaiter = {
        ...request,
        owner: this,
        settle(slot: ClaimSlot | undefined) {
          clock.clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(slot?.claim);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      work.wait(waiter, this.state.clock.now());
    });
  }

  async extend(claim: DispatchClaim, lockMs: number | undefined): Promise<void> {
    this.state.work.extend(claim, lockMs, this.state.clock.now());
  }

  async pending(threadId: string): Promise<InboxEntry[]> {
    return this.state.work.pending(threadId);
  }

  async acknowledge(threadId: string, submissionIds: readonly string[]): Promise<number> {
    return this.state.work.acknowledge(
      threadId,
      submissionIds,
      this.state.clock.now(),
      this.policy.dedupeWindowMs,
    );
  }

  async complete(claim: DispatchClaim): Promise<CompleteResult> {
    return { rewoken: this.state.work.complete(claim, this.state.clock.now()) };
  }

  async fail(claim: DispatchClaim, error: unknown, options: FailOptions): Promise<FailResult> {
    const retryable = options.retryable ?? (LunationError.isInstance(error) && error.isRetryable);
    return this.state.work.fail(
      claim,
      { error: toErrorInfo(error), retryable },
      this.policy,
      this.state.clock.now(),
    );
  }

  async handBack(claim: DispatchClaim, delayMs: number): Promise<void> {
    this.state.work.handBack(claim, delayMs, this.state.clock.now());
  }

  async depth(): Promise<DispatchDepth> {
    return this.state.work.depth(this.state.clock.now());
  }

  async deadLetters(limit: number): Promise<DeadLetter[]> {
    return this.state.work.deadLetters(limit);
  }

  async resubmit(threadId: string): Promise<boolean> {
    return this.state.work.resubmit(threadId, this.state.clock.now());
  }

  async requestCancel(input: CancelRequestInput): Promise<CancelRequest> {
    return this.state.cancels.request(input, this.state.clock.now());
  }

  async cancelRequests(threadId: string): Promise<CancelRequest[]> {
    return this.state.cancels.list(threadId);
  }

  async watchCancel(threadId: string, listener: (request: CancelRequest) => void): Promise<CancelWatch> {
    const watch = this.state.cancels.watch(threadId, listener);
    const watches = this.watches;
    watches.add(watch);
    return {
      close() {
        watches.delete(watch);
        watch.close();
      },
    };
  }

  async clearCancel(threadId: string, requestId: string | undefined): Promise<boolean> {
    return this.state.cancels.clear(threadId, requestId);
  }

  async appendEvents(
    runId: string,
    events: readonly AgentEvent[],
    fence: number | undefined,
  ): Promise<string[]> {
    return this.state.events.append(runId, events, fence, this.policy.maxEventsPerRun);
  }

  async readEvents(runId: string, after: number, limit: number): Promise<RunEventPage> {
    return this.state.events.read(runId, after, limit);
  }

  subscribeEvents(runId: string, after: number, signal: AbortSignal): AsyncIterable<RunEventRecord> {
    const subscriptions = this.subscriptions;
    const subscription = new LocalEventSubscription(this.state.events, runId, { after, signal }, (ended) =>
      subscriptions.delete(ended),
    );
    subscriptions.add(subscription);
    return subscription;
  }

  async endEvents(runId: string, ttlMs: number, fence: number | undefined): Promise<void> {
    this.state.events.end(runId, ttlMs, fence);
  }

  /** Nothing but a bug throws anything other than a LunationError here: it is an internal error. */
  toDispatchError(error: unknown, operation: string): LunationError {
    const message = error instanceof Error ? error.message : String(error);
    return new LunationError('internal', `The local dispatcher's ${operation} failed: ${message}`, {
      cause: error,
    });
  }

  /** Settles its waiting claims, hands its claims back, ends its subscriptions and cancel watches. */
  async close(): Promise<void> {
    const work = this.state.work;
    for (const waiter of work.takeWaiters(this)) waiter.settle(undefined);
    for (const claim of work.claimsOf(this)) work.handBack(claim, 0, this.state.clock.now());
    for (const subscription of [...this.subscriptions]) subscription.close();
    for (const watch of [...this.watches]) watch.close();
  }
}
