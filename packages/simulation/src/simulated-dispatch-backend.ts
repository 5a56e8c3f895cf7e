import type {
  AgentEvent,
  CancelRequest,
  CancelRequestInput,
  Clock,
  ClockTimer,
  DeadLetter,
  DispatchClaim,
  DispatchDepth,
  ErrorInfo,
  FailResult,
  IdSource,
  InboxEntry,
  ResourceDepth,
  RunEventPage,
  RunEventRecord,
  Submission,
  SubmitResult,
} from '@lunation/contract';
import {
  claimLostError,
  dispatchRetryDelay,
  eventLogEndedError,
  overloadedError,
  type ResolvedDispatchPolicy,
  staleEventFenceError,
} from '@lunation/contract/dispatch-utils';

/** One thread: its inbox, where its job is, and its failures. */
interface ThreadSlot {
  threadId: string;
  resourceId: string | undefined;
  entries: InboxEntry[];
  acknowledged: Map<string, number>;
  state: 'idle' | 'ready' | 'delayed' | 'active' | 'dead';
  failures: number;
  readyAt: number;
  dead: { error: ErrorInfo; at: number; attempts: number } | undefined;
}

/** A claim held on a thread. */
interface ClaimSlot {
  claim: DispatchClaim;
  slot: ThreadSlot;
  expiresAt: number;
  /** The lock the claim was made with: `extend` without `lockMs` keeps it. */
  lockMs: number;
  owner: object;
}

/** A claim call waiting for a thread. @internal */
export interface ClaimWaiter {
  workerId: string;
  lockMs: number;
  policy: ResolvedDispatchPolicy;
  owner: object;
  settle(claim: DispatchClaim | undefined): void;
}

interface RunLog {
  records: RunEventRecord[];
  lastId: number;
  ended: boolean;
  expiry: ClockTimer | undefined;
  fence: number | undefined;
  fenceSeq: number | undefined;
}

/** A watch of one thread's cancel requests. @internal */
export interface CancelWatcher {
  threadId: string;
  /** The request ids told already. */
  seen: Set<string>;
  closed: boolean;
  deliver(request: CancelRequest): void;
}

/**
 * The shared state of simulated dispatchers, as one Redis or PostgreSQL would hold it: inboxes, claims, retries
 * and dead letters, cancel requests and run event logs. Synchronous; every change is made by an operation the
 * scheduler runs. Times come from the clock it is given (the world's, in a simulation), ids from its id source.
 */
export class SimulatedDispatchBackend {
  private readonly threads = new Map<string, ThreadSlot>();
  private ready: ThreadSlot[] = [];
  private readonly delayed: ThreadSlot[] = [];
  private readonly claims = new Map<string, ClaimSlot>();
  private readonly waiters: ClaimWaiter[] = [];
  private readonly resources = new Map<string, ResourceDepth>();
  private readonly logs = new Map<string, RunLog>();
  private readonly wakers = new Map<string, Set<() => void>>();
  /** Thread id → run id (`''`: none named) → request, oldest first. */
  private readonly requests = new Map<string, Map<string, CancelRequest>>();
  private readonly watchers = new Map<string, Set<CancelWatcher>>();
  private timer: ClockTimer | undefined;
  private timerDue = Number.POSITIVE_INFINITY;
  private completedTotal = 0;
  private failedTotal = 0;

  constructor(
    /** The backend's clock (lock expiries, delays, log expiry). */
    readonly clock: Clock,
    /** Where claim tokens and cancel request ids come from. */
    readonly ids: IdSource,
  ) {}

  /** Adds a submission to its thread's inbox and wakes the thread (`SubmissionQueue.submit`). */
  submit(submission: Submission, policy: ResolvedDispatchPolicy): SubmitResult {
    const now = this.clock.now();
    this.forget(now, policy.dedupeWindowMs);
    let slot = this.threads.get(submission.threadId);
    if (slot?.entries.some((entry) => entry.id === submission.id) || slot?.acknowledged.has(submission.id)) {
      return { duplicate: true, deadLettered: slot.state === 'dead' };
    }
    if (policy.maxDepth !== Number.POSITIVE_INFINITY) {
      this.promote(now);
      const depth = this.ready.length + this.delayed.length;
      if (depth >= policy.maxDepth) throw overloadedError(depth, policy.maxDepth);
    }
    if (slot === undefined) {
      slot = {
        threadId: submission.threadId,
        resourceId: submission.resourceId,
        entries: [],
        acknowledged: new Map(),
        state: 'idle',
        failures: 0,
        readyAt: 0,
        dead: undefined,
      };
      this.threads.set(submission.threadId, slot);
    }
    slot.entries.push({ ...submission, submittedAt: now });
    if (submission.resourceId !== undefined) this.resource(submission.resourceId).pending++;
    if (slot.state === 'idle') {
      slot.resourceId = submission.resourceId;
      this.push(slot);
      this.serve();
    }
    return { duplicate: false, deadLettered: slot.state === 'dead' };
  }

  /** Claims the first claimable thread, or undefined. */
  tryClaim(request: Omit<ClaimWaiter, 'settle'>): DispatchClaim | undefined {
    const now = this.clock.now();
    this.promote(now);
    this.expire(now);
    const cap = request.policy.maxActivePerResource;
    const index = this.ready.findIndex(
      (slot) =>
        cap === Number.POSITIVE_INFINITY ||
        slot.resourceId === undefined ||
        (this.resources.get(slot.resourceId)?.active ?? 0) < cap,
    );
    if (index < 0) return undefined;
    const [slot] = this.ready.splice(index, 1) as [ThreadSlot];
    slot.state = 'active';
    const claim: DispatchClaim = {
      threadId: slot.threadId,
      ...(slot.resourceId === undefined ? {} : { resourceId: slot.resourceId }),
      workerId: request.workerId,
      attempt: slot.failures + 1,
      token: this.ids.id(),
      claimedAt: now,
    };
    const { lockMs, owner } = request;
    this.claims.set(claim.token, { claim, slot, expiresAt: now + lockMs, lockMs, owner });
    if (slot.resourceId !== undefined) this.resource(slot.resourceId).active++;
    return claim;
  }

  /** Registers a waiting claim, settled when a thread becomes claimable (or by its caller). */
  wait(waiter: ClaimWaiter): void {
    this.waiters.push(waiter);
    this.arm();
  }

  /** Removes a waiting claim; false when it was already served. */
  unwait(waiter: ClaimWaiter): boolean {
    const index = this.waiters.indexOf(waiter);
    if (index < 0) return false;
    this.waiters.splice(index, 1);
    this.arm();
    return true;
  }

  /** Waiting claims of one dispatcher instance, removed. */
  takeWaiters(owner: object): ClaimWaiter[] {
    const taken = this.waiters.filter((waiter) => waiter.owner === owner);
    for (const waiter of taken) this.unwait(waiter);
    return taken;
  }

  /** Current claims made by one dispatcher instance. */
  claimsOf(owner: object): DispatchClaim[] {
    return [...this.claims.values()].filter((held) => held.owner === owner).map((held) => held.claim);
  }

  /**
   * Keeps a live claim for `lockMs` more (without it, for the lock the claim was made with); `claim-lost` when it
   * lapsed or was released.
   */
  extend(claim: DispatchClaim, lockMs: number | undefined): void {
    const now = this.clock.now();
    const held = this.current(claim, now);
    held.expiresAt = now + (lockMs ?? held.lockMs);
  }

  /**
   * Takes a live claim away from its holder without telling it, as an engine does when it wrongly judges the
   * holder stalled: the thread goes first in line again (a duplicate delivery). False when the claim is gone.
   */
  revoke(token: string): boolean {
    const held = this.claims.get(token);
    if (held === undefined) return false;
    this.drop(held);
    this.ready.unshift(held.slot);
    held.slot.state = 'ready';
    this.serve();
    return true;
  }

  /** The thread's unacknowledged submissions, in submission order. */
  pending(threadId: string): InboxEntry[] {
    return this.threads.get(threadId)?.entries.slice() ?? [];
  }

  /** Removes committed submissions from the inbox; resolves how many it removed. */
  acknowledge(threadId: string, ids: readonly string[], dedupeWindowMs: number): number {
    const now = this.clock.now();
    const slot = this.threads.get(threadId);
    if (slot === undefined) return 0;
    const wanted = new Set(ids);
    const kept: InboxEntry[] = [];
    let removed = 0;
    for (const entry of slot.entries) {
      if (!wanted.has(entry.id)) {
        kept.push(entry);
        continue;
      }
      removed++;
      slot.acknowledged.set(entry.id, now);
      if (entry.resourceId !== undefined) this.resource(entry.resourceId).pending--;
    }
    slot.entries = kept;
    this.forget(now, dedupeWindowMs);
    return removed;
  }

  /** Ends a claim; true when submissions arrived meanwhile (the thread waits to be claimed again). */
  complete(claim: DispatchClaim): boolean {
    const { slot } = this.release(claim);
    slot.failures = 0;
    this.completedTotal++;
    const rewoken = slot.entries.length > 0;
    if (rewoken) this.push(slot);
    else slot.state = 'idle';
    this.serve();
    return rewoken;
  }

  /** Ends a claim with a failure: retried after a backoff, or dead-lettered. */
  fail(
    claim: DispatchClaim,
    error: ErrorInfo,
    retryable: boolean,
    policy: ResolvedDispatchPolicy,
  ): FailResult {
    const now = this.clock.now();
    const { slot } = this.release(claim);
    slot.failures++;
    this.failedTotal++;
    if (retryable && slot.failures < policy.maxAttempts) {
      const retryAt = now + dispatchRetryDelay(policy.backoff, slot.failures);
      this.delay(slot, retryAt);
      this.serve();
      return { deadLettered: false, retryAt };
    }
    slot.state = 'dead';
    slot.dead = { error, at: now, attempts: slot.failures };
    if (slot.resourceId !== undefined) this.resource(slot.resourceId).deadLettered++;
    this.serve();
    return { deadLettered: true };
  }

  /** Gives the thread back without a failure; claimable again after `delayMs`. */
  handBack(claim: DispatchClaim, delayMs: number): void {
    const now = this.clock.now();
    const { slot } = this.release(claim);
    if (delayMs > 0) this.delay(slot, now + delayMs);
    else this.push(slot);
    this.serve();
  }

  /** Makes a dead-lettered thread claimable again; false when it was not dead-lettered. */
  resubmit(threadId: string): boolean {
    const slot = this.threads.get(threadId);
    if (slot?.state !== 'dead') return false;
    slot.failures = 0;
    slot.dead = undefined;
    if (slot.resourceId !== undefined) this.resource(slot.resourceId).deadLettered--;
    this.push(slot);
    this.serve();
    return true;
  }

  /** Queue figures now. */
  depth(): DispatchDepth {
    const now = this.clock.now();
    this.promote(now);
    this.expire(now);
    const byResource: Record<string, ResourceDepth> = {};
    for (const [resourceId, figures] of [...this.resources].sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    )) {
      if (figures.pending > 0 || figures.active > 0 || figures.deadLettered > 0) {
        byResource[resourceId] = { ...figures };
      }
    }
    let pending = 0;
    let dead = 0;
    for (const slot of this.threads.values()) {
      pending += slot.entries.length;
      if (slot.state === 'dead') dead++;
    }
    return {
      waiting: this.ready.length,
      active: this.claims.size,
      delayed: this.delayed.length,
      deadLettered: dead,
      pending,
      completed: this.completedTotal,
      failed: this.failedTotal,
      byResource,
    };
  }

  /** Dead-lettered threads, oldest first, at most `limit`. */
  deadLetters(limit: number): DeadLetter[] {
    const letters: DeadLetter[] = [];
    for (const slot of this.threads.values()) {
      if (slot.dead === undefined) continue;
      letters.push({
        threadId: slot.threadId,
        ...(slot.resourceId === undefined ? {} : { resourceId: slot.resourceId }),
        attempts: slot.dead.attempts,
        error: slot.dead.error,
        deadLetteredAt: slot.dead.at,
        pending: slot.entries.length,
      });
    }
    return letters.sort((a, b) => a.deadLetteredAt - b.deadLetteredAt).slice(0, limit);
  }

  /** Records a cancel request for the thread (replacing only the one for the same run) and tells its watchers. */
  requestCancel(input: CancelRequestInput): CancelRequest {
    const request: CancelRequest = {
      id: this.ids.id(),
      threadId: input.threadId,
      ...(input.runId === undefined ? {} : { runId: input.runId }),
      reason: input.reason,
      requestedAt: this.clock.now(),
    };
    let thread = this.requests.get(input.threadId);
    if (thread === undefined) {
      thread = new Map();
      this.requests.set(input.threadId, thread);
    }
    const key = input.runId ?? '';
    thread.delete(key); // the newer request for the run is the newest of the thread
    thread.set(key, request);
    for (const watcher of this.watchers.get(input.threadId) ?? []) watcher.deliver(request);
    return request;
  }

  /** The thread's pending cancel requests, oldest first. */
  cancelRequests(threadId: string): CancelRequest[] {
    return [...(this.requests.get(threadId)?.values() ?? [])];
  }

  /** Starts a watch of the thread's cancel requests; those already there are delivered at once. */
  watch(watcher: CancelWatcher): void {
    let set = this.watchers.get(watcher.threadId);
    if (set === undefined) {
      set = new Set();
      this.watchers.set(watcher.threadId, set);
    }
    set.add(watcher);
    for (const existing of this.cancelRequests(watcher.threadId)) watcher.deliver(existing);
  }

  /** Stops a watch. */
  unwatch(watcher: CancelWatcher): void {
    const set = this.watchers.get(watcher.threadId);
    if (set?.delete(watcher) && set.size === 0) this.watchers.delete(watcher.threadId);
  }

  /** Clears the request `requestId` names (none given: all of the thread's); false when nothing was cleared. */
  clearCancel(threadId: string, requestId: string | undefined): boolean {
    const thread = this.requests.get(threadId);
    if (thread === undefined) return false;
    if (requestId === undefined) return this.requests.delete(threadId);
    for (const [key, request] of thread) {
      if (request.id !== requestId) continue;
      thread.delete(key);
      if (thread.size === 0) this.requests.delete(threadId);
      return true;
    }
    return false;
  }

  /** Appends events to a run's log under the fencing rules of `RunEventLog`; the ids of what it appended. */
  appendEvents(
    runId: string,
    events: readonly AgentEvent[],
    fence: number | undefined,
    maxEvents: number,
  ): string[] {
    let log = this.logs.get(runId);
    if (log?.ended) throw eventLogEndedError(runId);
    if (log !== undefined && fence !== undefined && log.fence !== undefined && fence < log.fence) {
      throw staleEventFenceError(runId, fence, log.fence);
    }
    if (log === undefined) {
      log = {
        records: [],
        lastId: 0,
        ended: false,
        expiry: undefined,
        fence: undefined,
        fenceSeq: undefined,
      };
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
    if (log.records.length > maxEvents) log.records.splice(0, log.records.length - maxEvents);
    if (ids.length > 0) this.wake(runId);
    return ids;
  }

  /** A run's log as it is, to read without copying (the simulation's invariants), or undefined. */
  eventLog(
    runId: string,
  ): { readonly records: readonly RunEventRecord[]; readonly ended: boolean } | undefined {
    return this.logs.get(runId);
  }

  /** Events of a run's log after id `after`, at most `limit`. */
  readEvents(runId: string, after: number, limit: number): RunEventPage {
    const log = this.logs.get(runId);
    if (log === undefined) return { events: [], ended: false };
    const start = log.records.findIndex((record) => Number(record.id) > after);
    const from = start < 0 ? log.records.length : start;
    const end = Math.min(log.records.length, from + limit);
    return { events: log.records.slice(from, end), ended: log.ended && end === log.records.length };
  }

  /** Marks a run's log ended; it is forgotten `ttlMs` later. */
  endEvents(runId: string, ttlMs: number, fence: number | undefined): void {
    let log = this.logs.get(runId);
    if (log !== undefined && fence !== undefined && log.fence !== undefined && fence < log.fence) {
      throw staleEventFenceError(runId, fence, log.fence);
    }
    if (log === undefined) {
      log = {
        records: [],
        lastId: 0,
        ended: false,
        expiry: undefined,
        fence: undefined,
        fenceSeq: undefined,
      };
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

  private current(claim: DispatchClaim, now: number): ClaimSlot {
    const held = this.claims.get(claim.token);
    if (held === undefined) throw claimLostError(claim);
    if (held.expiresAt <= now) {
      this.expire(now);
      throw claimLostError(claim);
    }
    return held;
  }

  private release(claim: DispatchClaim): ClaimSlot {
    const held = this.current(claim, this.clock.now());
    this.drop(held);
    return held;
  }

  private drop(held: ClaimSlot): void {
    this.claims.delete(held.claim.token);
    if (held.slot.resourceId !== undefined) this.resource(held.slot.resourceId).active--;
  }

  private push(slot: ThreadSlot): void {
    slot.state = 'ready';
    this.ready.push(slot);
  }

  private delay(slot: ThreadSlot, readyAt: number): void {
    slot.state = 'delayed';
    slot.readyAt = readyAt;
    let index = this.delayed.length;
    while (index > 0 && (this.delayed[index - 1] as ThreadSlot).readyAt > readyAt) index--;
    this.delayed.splice(index, 0, slot);
  }

  private promote(now: number): void {
    while (this.delayed.length > 0 && (this.delayed[0] as ThreadSlot).readyAt <= now) {
      this.push(this.delayed.shift() as ThreadSlot);
    }
  }

  /** Claims whose lock ran out are lost: their threads go first in line again, in expiry order. */
  private expire(now: number): void {
    const lapsed = [...this.claims.values()]
      .filter((held) => held.expiresAt <= now)
      .sort((a, b) => b.expiresAt - a.expiresAt);
    for (const held of lapsed) {
      this.drop(held);
      held.slot.state = 'ready';
      this.ready.unshift(held.slot);
    }
  }

  /** Hands threads to waiting claims while there are both; arms the timer for the next due time. */
  private serve(): void {
    while (this.waiters.length > 0) {
      const waiter = this.waiters[0] as ClaimWaiter;
      const claim = this.tryClaim(waiter);
      if (claim === undefined) break;
      this.waiters.shift();
      waiter.settle(claim);
    }
    this.arm();
  }

  private arm(): void {
    let due = Number.POSITIVE_INFINITY;
    if (this.waiters.length > 0) {
      due = this.delayed[0]?.readyAt ?? due;
      for (const held of this.claims.values()) if (held.expiresAt < due) due = held.expiresAt;
    }
    if (due === this.timerDue) return;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerDue = due;
    if (due === Number.POSITIVE_INFINITY) return;
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.timerDue = Number.POSITIVE_INFINITY;
        this.serve();
      },
      Math.max(0, due - this.clock.now() + 1),
    );
  }

  private forget(now: number, windowMs: number): void {
    for (const [threadId, slot] of this.threads) {
      for (const [id, at] of slot.acknowledged) if (at <= now - windowMs) slot.acknowledged.delete(id);
      if (slot.state === 'idle' && slot.entries.length === 0 && slot.acknowledged.size === 0) {
        this.threads.delete(threadId);
      }
    }
  }

  private resource(resourceId: string): ResourceDepth {
    let figures = this.resources.get(resourceId);
    if (figures === undefined) {
      figures = { pending: 0, active: 0, deadLettered: 0 };
      this.resources.set(resourceId, figures);
    }
    return figures;
  }
}
