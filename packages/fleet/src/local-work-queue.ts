import type {
  DeadLetter,
  DispatchClaim,
  DispatchDepth,
  ErrorInfo,
  FailResult,
  InboxEntry,
  ResourceDepth,
  Submission,
  SubmitResult,
} from '@lunation/contract';
import {
  claimLostError,
  dispatchRetryDelay,
  overloadedError,
  type ResolvedDispatchPolicy,
} from '@lunation/contract/dispatch-utils';
import { createId } from '@lunation/runtime/executor';
import { type LineSlot, ReadyLine } from './local-ready-line.js';

/** One thread: its inbox, where its job is, and its failures. */
interface ThreadSlot {
  threadId: string;
  /** The tenant of the submission that last woke the thread. */
  resourceId: string | undefined;
  entries: InboxEntry[];
  /** Pending submission ids. */
  pendingIds: Set<string>;
  /** Acknowledged submission ids, with when, for the dedupe window. */
  acknowledged: Map<string, number>;
  state: LineSlot['state'];
  /** Failed attempts since the thread last completed. */
  failures: number;
  /** For `delayed`: when it becomes claimable. */
  readyAt: number;
  claim: ClaimSlot | undefined;
  dead: { error: ErrorInfo; at: number; attempts: number } | undefined;
}

/** A claim held on a thread. */
export interface ClaimSlot {
  claim: DispatchClaim;
  slot: ThreadSlot;
  expiresAt: number;
  /** The dispatcher instance that made it (to hand it back on close). */
  owner: object;
}

/** A claim call waiting for a thread. */
export interface ClaimWaiter {
  workerId: string;
  lockMs: number;
  policy: ResolvedDispatchPolicy;
  owner: object;
  settle(claim: ClaimSlot | undefined): void;
}

const emptyResource = (): ResourceDepth => ({ pending: 0, active: 0, deadLettered: 0 });

/**
 * The threads, inboxes and claims of a local dispatch backend: a synchronous state machine over a `ReadyLine`.
 * Lock expiry is checked lazily, when a call could be affected by it.
 */
export class LocalWorkQueue {
  private readonly threads = new Map<string, ThreadSlot>();
  private readonly line = new ReadyLine<ThreadSlot>();
  private readonly claims = new Map<string, ClaimSlot>();
  /** The earliest lock expiry among claims (may be early after an extend; then it is recomputed). */
  private nextExpiry = Number.POSITIVE_INFINITY;
  private readonly waiters: ClaimWaiter[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerDue = Number.POSITIVE_INFINITY;
  /** Acknowledged ids in acknowledgement order, to forget them after the dedupe window. */
  private readonly acknowledgements: { slot: ThreadSlot; id: string; at: number }[] = [];
  private acknowledgementHead = 0;
  private readonly resources = new Map<string, ResourceDepth>();
  private pendingTotal = 0;
  private deadTotal = 0;
  private completedTotal = 0;
  private failedTotal = 0;

  /** Adds a submission to its thread's inbox and wakes the thread (unless it is dead-lettered). */
  submit(submission: Submission, policy: ResolvedDispatchPolicy, now: number): SubmitResult {
    this.forgetAcknowledged(now, policy.dedupeWindowMs);
    let slot = this.threads.get(submission.threadId);
    if (slot?.pendingIds.has(submission.id) || slot?.acknowledged.has(submission.id)) {
      return { duplicate: true, deadLettered: slot.state === 'dead' };
    }
    if (policy.maxDepth !== Number.POSITIVE_INFINITY) {
      this.line.promoteDue(now);
      const depth = this.line.readyCount + this.line.delayedCount;
      if (depth >= policy.maxDepth) throw overloadedError(depth, policy.maxDepth);
    }
    if (slot === undefined) {
      slot = {
        threadId: submission.threadId,
        resourceId: submission.resourceId,
        entries: [],
        pendingIds: new Set(),
        acknowledged: new Map(),
        state: 'idle',
        failures: 0,
        readyAt: 0,
        claim: undefined,
        dead: undefined,
      };
      this.threads.set(submission.threadId, slot);
    }
    slot.entries.push({ ...submission, submittedAt: now });
    slot.pendingIds.add(submission.id);
    this.pendingTotal++;
    if (submission.resourceId !== undefined) this.resource(submission.resourceId).pending++;
    if (slot.state === 'idle') {
      slot.resourceId = submission.resourceId;
      this.line.push(slot);
      if (this.waiters.length > 0) this.serve(now);
    }
    return { duplicate: false, deadLettered: slot.state === 'dead' };
  }

  /** Claims the first claimable thread, or undefined. */
  tryClaim(waiter: Omit<ClaimWaiter, 'settle'>, now: number): ClaimSlot | undefined {
    this.line.promoteDue(now);
    this.expireLocks(now);
    const cap = waiter.policy.maxActivePerResource;
    const slot = this.line.take(
      (candidate) =>
        cap === Number.POSITIVE_INFINITY ||
        candidate.resourceId === undefined ||
        (this.resources.get(candidate.resourceId)?.active ?? 0) < cap,
    );
    return slot === undefined ? undefined : this.hold(slot, waiter, now);
  }

  /** Registers a waiting claim; it is settled by `serve` or by its caller (timeout, abort, close). */
  wait(waiter: ClaimWaiter, now: number): void {
    this.waiters.push(waiter);
    this.arm(now);
  }

  /** Removes a waiting claim; false when it was already served. */
  unwait(waiter: ClaimWaiter): boolean {
    const index = this.waiters.indexOf(waiter);
    if (index < 0) return false;
    this.waiters.splice(index, 1);
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

  /** The live claim slot for `claim`; `claim-lost` when it expired or was released. */
  current(claim: DispatchClaim, now: number): ClaimSlot {
    const held = this.claims.get(claim.token);
    if (held === undefined) throw claimLostError(claim);
    if (held.expiresAt <= now) {
      this.expireLocks(now);
      throw claimLostError(claim);
    }
    return held;
  }

  extend(claim: DispatchClaim, lockMs: number, now: number): void {
    this.current(claim, now).expiresAt = now + lockMs;
  }

  pending(threadId: string): InboxEntry[] {
    return this.threads.get(threadId)?.entries.slice() ?? [];
  }

  acknowledge(threadId: string, ids: readonly string[], now: number, dedupeWindowMs: number): number {
    const slot = this.threads.get(threadId);
    if (slot === undefined) return 0;
    let removed = 0;
    for (const id of ids) {
      if (!slot.pendingIds.delete(id)) continue;
      removed++;
      slot.acknowledged.set(id, now);
      this.acknowledgements.push({ slot, id, at: now });
    }
    if (removed === 0) return 0;
    const kept: InboxEntry[] = [];
    for (const entry of slot.entries) {
      if (slot.pendingIds.has(entry.id)) kept.push(entry);
      else if (entry.resourceId !== undefined) this.resource(entry.resourceId).pending--;
    }
    slot.entries = kept;
    this.pendingTotal -= removed;
    this.forgetAcknowledged(now, dedupeWindowMs);
    return removed;
  }

  complete(claim: DispatchClaim, now: number): boolean {
    const { slot } = this.release(claim, now);
    slot.failures = 0;
    this.completedTotal++;
    const rewoken = slot.entries.length > 0;
    if (rewoken) this.line.push(slot);
    else {
      slot.state = 'idle';
      if (slot.acknowledged.size === 0) this.threads.delete(slot.threadId);
    }
    this.serve(now);
    return rewoken;
  }

  fail(
    claim: DispatchClaim,
    error: ErrorInfo,
    retryable: boolean,
    policy: ResolvedDispatchPolicy,
    now: number,
  ): FailResult {
    const { slot } = this.release(claim, now);
    slot.failures++;
    this.failedTotal++;
    if (retryable && slot.failures < policy.maxAttempts) {
      const retryAt = now + dispatchRetryDelay(policy.backoff, slot.failures);
      this.line.delay(slot, retryAt);
      this.serve(now);
      return { deadLettered: false, retryAt };
    }
    slot.state = 'dead';
    slot.dead = { error, at: now, attempts: slot.failures };
    this.deadTotal++;
    if (slot.resourceId !== undefined) this.resource(slot.resourceId).deadLettered++;
    this.serve(now);
    return { deadLettered: true };
  }

  handBack(claim: DispatchClaim, delayMs: number, now: number): void {
    const { slot } = this.release(claim, now);
    if (delayMs > 0) this.line.delay(slot, now + delayMs);
    else this.line.push(slot);
    this.serve(now);
  }

  resubmit(threadId: string, now: number): boolean {
    const slot = this.threads.get(threadId);
    if (slot?.state !== 'dead') return false;
    slot.failures = 0;
    slot.dead = undefined;
    this.deadTotal--;
    if (slot.resourceId !== undefined) this.resource(slot.resourceId).deadLettered--;
    this.line.push(slot);
    this.serve(now);
    return true;
  }

  depth(now: number): DispatchDepth {
    this.line.promoteDue(now);
    this.expireLocks(now);
    const byResource: Record<string, ResourceDepth> = {};
    for (const [resourceId, figures] of this.resources) {
      if (figures.pending > 0 || figures.active > 0 || figures.deadLettered > 0) {
        byResource[resourceId] = { ...figures };
      }
    }
    return {
      waiting: this.line.readyCount,
      active: this.claims.size,
      delayed: this.line.delayedCount,
      deadLettered: this.deadTotal,
      pending: this.pendingTotal,
      completed: this.completedTotal,
      failed: this.failedTotal,
      byResource,
    };
  }

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

  /** Hands threads to waiting claims while there are both; arms the timer for the next due time. */
  serve(now: number): void {
    while (this.waiters.length > 0) {
      const waiter = this.waiters[0] as ClaimWaiter;
      const held = this.tryClaim(waiter, now);
      if (held === undefined) break;
      this.waiters.shift();
      waiter.settle(held);
    }
    this.arm(now);
  }

  private hold(slot: ThreadSlot, waiter: Omit<ClaimWaiter, 'settle'>, now: number): ClaimSlot {
    slot.state = 'active';
    const claim: DispatchClaim = {
      threadId: slot.threadId,
      ...(slot.resourceId === undefined ? {} : { resourceId: slot.resourceId }),
      workerId: waiter.workerId,
      attempt: slot.failures + 1,
      token: createId(),
      claimedAt: now,
    };
    const held: ClaimSlot = { claim, slot, expiresAt: now + waiter.lockMs, owner: waiter.owner };
    slot.claim = held;
    this.claims.set(claim.token, held);
    if (held.expiresAt < this.nextExpiry) this.nextExpiry = held.expiresAt;
    if (slot.resourceId !== undefined) this.resource(slot.resourceId).active++;
    return held;
  }

  private release(claim: DispatchClaim, now: number): ClaimSlot {
    const held = this.current(claim, now);
    this.claims.delete(claim.token);
    held.slot.claim = undefined;
    if (held.slot.resourceId !== undefined) this.resource(held.slot.resourceId).active--;
    return held;
  }

  /** Claims whose lock expired are lost: their threads go first in line again. */
  private expireLocks(now: number): void {
    if (now < this.nextExpiry) return;
    let next = Number.POSITIVE_INFINITY;
    for (const held of this.claims.values()) {
      if (held.expiresAt > now) {
        if (held.expiresAt < next) next = held.expiresAt;
        continue;
      }
      this.claims.delete(held.claim.token);
      const { slot } = held;
      slot.claim = undefined;
      if (slot.resourceId !== undefined) this.resource(slot.resourceId).active--;
      this.line.pushFront(slot);
    }
    this.nextExpiry = next;
  }

  /** Sets the one timer that serves waiting claims when a delay or a lock runs out. */
  private arm(now: number): void {
    if (this.waiters.length === 0) {
      if (this.timer !== undefined) clearTimeout(this.timer);
      this.timer = undefined;
      this.timerDue = Number.POSITIVE_INFINITY;
      return;
    }
    const due = Math.min(this.line.nextDue, this.nextExpiry);
    if (due === Number.POSITIVE_INFINITY || (this.timer !== undefined && this.timerDue <= due)) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerDue = due;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerDue = Number.POSITIVE_INFINITY;
        this.serve(Date.now());
      },
      Math.max(0, due - now + 1),
    );
  }

  private forgetAcknowledged(now: number, windowMs: number): void {
    const horizon = now - windowMs;
    let index = this.acknowledgementHead;
    while (index < this.acknowledgements.length) {
      const acknowledgement = this.acknowledgements[index] as { slot: ThreadSlot; id: string; at: number };
      if (acknowledgement.at > horizon) break;
      const { slot, id, at } = acknowledgement;
      if (slot.acknowledged.get(id) === at) slot.acknowledged.delete(id);
      if (slot.state === 'idle' && slot.entries.length === 0 && slot.acknowledged.size === 0) {
        if (this.threads.get(slot.threadId) === slot) this.threads.delete(slot.threadId);
      }
      index++;
    }
    if (index === this.acknowledgementHead) return;
    if (index * 2 > this.acknowledgements.length) {
      this.acknowledgements.splice(0, index);
      this.acknowledgementHead = 0;
    } else this.acknowledgementHead = index;
  }

  private resource(resourceId: string): ResourceDepth {
    let figures = this.resources.get(resourceId);
    if (figures === undefined) {
      figures = emptyResource();
      this.resources.set(resourceId, figures);
    }
    return figures;
  }
}
