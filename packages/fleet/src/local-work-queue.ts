import type {
  Clock,
  DeadLetter,
  DispatchClaim,
  DispatchDepth,
  ErrorInfo,
  FailResult,
  IdSource,
  InboxEntry,
  Submission,
  SubmitResult,
} from '@lunation/contract';
import {
  claimLostError,
  dispatchRetryDelay,
  overloadedError,
  type ResolvedDispatchPolicy,
} from '@lunation/contract/dispatch-utils';
import { LocalAcknowledgements } from './local-acknowledgements.js';
import { LocalClaimWaiters } from './local-claim-waiters.js';
import { deadLettersOf, LocalQueueFigures } from './local-queue-figures.js';
import { ReadyLine } from './local-ready-line.js';
import { type ClaimSlot, type ClaimWaiter, newThreadSlot, type ThreadSlot } from './local-thread-slot.js';

export type { ClaimSlot, ClaimWaiter } from './local-thread-slot.js';

/** A failed claim's error, and whether to retry it. */
export interface ClaimFailure {
  error: ErrorInfo;
  retryable: boolean;
}

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
  private readonly waiters: LocalClaimWaiters;
  private readonly acknowledgements = new LocalAcknowledgements(this.threads);
  private readonly figures = new LocalQueueFigures();

  /** `clock` sets the timer that serves waiting claims; `ids` makes claim tokens. */
  constructor(
    clock: Clock,
    private readonly ids: IdSource,
  ) {
    this.waiters = new LocalClaimWaiters(clock, (now) => this.serve(now));
  }

  /** Adds a submission to its thread's inbox and wakes the thread (unless it is dead-lettered). */
  submit(submission: Submission, policy: ResolvedDispatchPolicy, now: number): SubmitResult {
    this.acknowledgements.forget(now, policy.dedupeWindowMs);
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
      slot = newThreadSlot(submission);
      this.threads.set(submission.threadId, slot);
    }
    slot.entries.push({ ...submission, submittedAt: now });
    slot.pendingIds.add(submission.id);
    this.figures.pending++;
    if (submission.resourceId !== undefined) this.figures.resource(submission.resourceId).pending++;
    if (slot.state === 'idle') {
      slot.resourceId = submission.resourceId;
      this.line.push(slot);
      if (this.waiters.size > 0) this.serve(now);
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
        this.figures.resource(candidate.resourceId).active < cap,
    );
    return slot === undefined ? undefined : this.hold(slot, waiter, now);
  }

  /** Registers a waiting claim; it is settled by `serve` or by its caller (timeout, abort, close). */
  wait(waiter: ClaimWaiter, now: number): void {
    this.waiters.add(waiter);
    this.arm(now);
  }

  /** Removes a waiting claim; false when it was already served. */
  unwait(waiter: ClaimWaiter): boolean {
    return this.waiters.remove(waiter);
  }

  /** Waiting claims of one dispatcher instance, removed. */
  takeWaiters(owner: object): ClaimWaiter[] {
    return this.waiters.takeOf(owner);
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

  /** Keeps the claim for `lockMs` more; without it, for the lock the claim was made with. */
  extend(claim: DispatchClaim, lockMs: number | undefined, now: number): void {
    const held = this.current(claim, now);
    held.expiresAt = now + (lockMs ?? held.lockMs);
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
      this.acknowledgements.record(slot, id, now);
    }
    if (removed === 0) return 0;
    const kept: InboxEntry[] = [];
    for (const entry of slot.entries) {
      if (slot.pendingIds.has(entry.id)) kept.push(entry);
      else if (entry.resourceId !== undefined) this.figures.resource(entry.resourceId).pending--;
    }
    slot.entries = kept;
    this.figures.pending -= removed;
    this.acknowledgements.forget(now, dedupeWindowMs);
    return removed;
  }

  complete(claim: DispatchClaim, now: number): boolean {
    const { slot } = this.release(claim, now);
    slot.failures = 0;
    this.figures.completed++;
    const rewoken = slot.entries.length > 0;
    if (rewoken) this.line.push(slot);
    else {
      slot.state = 'idle';
      if (slot.acknowledged.size === 0) this.threads.delete(slot.threadId);
    }
    this.serve(now);
    return rewoken;
  }

  fail(claim: DispatchClaim, failure: ClaimFailure, policy: ResolvedDispatchPolicy, now: number): FailResult {
    const { slot } = this.release(claim, now);
    slot.failures++;
    this.figures.failed++;
    if (failure.retryable && slot.failures < policy.maxAttempts) {
      const retryAt = now + dispatchRetryDelay(policy.backoff, slot.failures);
      this.line.delay(slot, retryAt);
      this.serve(now);
      return { deadLettered: false, retryAt };
    }
    slot.state = 'dead';
    slot.dead = { error: failure.error, at: now, attempts: slot.failures };
    this.figures.dead++;
    if (slot.resourceId !== undefined) this.figures.resource(slot.resourceId).deadLettered++;
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
    this.figures.dead--;
    if (slot.resourceId !== undefined) this.figures.resource(slot.resourceId).deadLettered--;
    this.line.push(slot);
    this.serve(now);
    return true;
  }

  depth(now: number): DispatchDepth {
    this.line.promoteDue(now);
    this.expireLocks(now);
    return this.figures.depth({
      waiting: this.line.readyCount,
      active: this.claims.size,
      delayed: this.line.delayedCount,
    });
  }

  deadLetters(limit: number): DeadLetter[] {
    return deadLettersOf(this.threads.values(), limit);
  }

  /** Hands threads to waiting claims while there are both; arms the timer for the next due time. */
  serve(now: number): void {
    for (let waiter = this.waiters.first; waiter !== undefined; waiter = this.waiters.first) {
      const held = this.tryClaim(waiter, now);
      if (held === undefined) break;
      this.waiters.remove(waiter);
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
      token: this.ids.id(),
      claimedAt: now,
    };
    const { lockMs, owner } = waiter;
    const held: ClaimSlot = { claim, slot, expiresAt: now + lockMs, lockMs, owner };
    slot.claim = held;
    this.claims.set(claim.token, held);
    if (held.expiresAt < this.nextExpiry) this.nextExpiry = held.expiresAt;
    this.figures.active(slot, 1);
    return held;
  }

  private release(claim: DispatchClaim, now: number): ClaimSlot {
    const held = this.current(claim, now);
    this.claims.delete(claim.token);
    held.slot.claim = undefined;
    this.figures.active(held.slot, -1);
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
      this.lose(held);
    }
    this.nextExpiry = next;
  }

  /**
   * Takes a live claim away from its holder without telling it, as an engine does when it wrongly judges the
   * holder stalled: the thread goes first in line again (a duplicate delivery). False when the claim is gone.
   */
  revoke(token: string, now: number): boolean {
    const held = this.claims.get(token);
    if (held === undefined) return false;
    this.lose(held);
    this.serve(now);
    return true;
  }

  /** A claim lost (its lock ran out, or it was revoked): its thread goes first in line again. */
  private lose(held: ClaimSlot): void {
    this.claims.delete(held.claim.token);
    const { slot } = held;
    slot.claim = undefined;
    this.figures.active(slot, -1);
    this.line.pushFront(slot);
  }

  /** Sets the timer that serves waiting claims when a delay or a lock runs out. */
  private arm(now: number): void {
    this.waiters.arm(now, Math.min(this.line.nextDue, this.nextExpiry));
  }
}
