import {
  type ClaimOptions,
  type CompleteResult,
  type DispatchClaim,
  type FailOptions,
  type FailResult,
  LunationError,
  toErrorInfo,
} from '@lunation/contract';
import { claimLostError, dispatchRetryDelay } from '@lunation/contract/dispatch-utils';
import { Job, UnrecoverableError, type Worker } from 'bullmq';
import { ClaimGate } from './claim-gate.js';
import type { DispatchContext } from './dispatch-context.js';
import { dispatchScripts } from './dispatch-scripts.js';
import { jobIdOf } from './redis-keys.js';
import { isLostClaim } from './to-dispatch-error.js';
import { withTimeout } from './with-timeout.js';

/** What a BullMQ job of a thread carries. */
export interface ThreadJobData {
  threadId: string;
  resourceId?: string;
}

interface HeldClaim {
  claim: DispatchClaim;
  job: Job;
  /** The lock the claim was made with: `extend` without `lockMs` keeps it. */
  lockMs: number;
}

/**
 * The job hash field holding `lockMs:token` of a claim made with a lock other than the dispatcher's default, so
 * that another instance extending the claim without `lockMs` keeps it too.
 */
const claimLockField = 'lunationClaimLock';

/**
 * The worker side on BullMQ: claims are BullMQ jobs fetched by hand (a Worker without a processor), their token
 * the job's lock token. The dispatcher adds the rest: tenant slots and re-waking a completed thread whose inbox is
 * not empty. A lost claim (its lock ran out) is never a failure: the stalled check puts the job back in line.
 */
export class BullMQClaims {
  private readonly held = new Map<string, HeldClaim>();
  private readonly gate: ClaimGate;
  private closed = false;

  constructor(
    private readonly context: DispatchContext,
    private readonly worker: Worker,
    private readonly ready: Promise<void>,
  ) {
    this.gate = new ClaimGate(worker, context);
  }

  async claim(options: ClaimOptions, lockMs: number, waitMs: number): Promise<DispatchClaim | undefined> {
    await this.bounded(this.ready, 'worker connection');
    const deadline = this.context.clock.now() + waitMs;
    const { signal } = options;
    while (!this.closed && !signal?.aborted) {
      let job = await this.bounded(this.gate.fetchNow(), 'claim', (late) => {
        if (late !== undefined) late.moveToWait(late.token).catch(this.context.reportError);
      });
      if (job === undefined && this.context.clock.now() < deadline)
        job = await this.gate.wait(deadline, signal);
      if (job === undefined) {
        if (this.context.clock.now() >= deadline || this.closed || signal?.aborted) return undefined;
        continue;
      }
      if (this.closed || signal?.aborted) {
        await job.moveToWait(job.token).catch(this.context.reportError);
        return undefined;
      }
      const claim = await this.bounded(this.accept(job, options.workerId, lockMs), 'claim', (late) => {
        if (late !== undefined) this.handBack(late, 0).catch(this.context.reportError);
      });
      if (claim !== undefined) return claim;
    }
    return undefined;
  }

  /** Keeps the claim for `lockMs` more; without it, for the lock the claim was made with. */
  extend(claim: DispatchClaim, lockMs: number | undefined): Promise<void> {
    return this.bounded(this.extendNow(claim, lockMs), 'extend');
  }

  complete(claim: DispatchClaim): Promise<CompleteResult> {
    return this.bounded(this.completeNow(claim), 'complete');
  }

  fail(claim: DispatchClaim, error: unknown, options: FailOptions): Promise<FailResult> {
    return this.bounded(this.failNow(claim, error, options), 'fail');
  }

  handBack(claim: DispatchClaim, delayMs: number): Promise<void> {
    return this.bounded(this.handBackNow(claim, delayMs), 'handBack');
  }

  /** Stops claiming: waiting claims resolve undefined; held claims go back to the queue at once. */
  async close(): Promise<void> {
    this.closed = true;
    this.gate.close();
    for (const { claim } of [...this.held.values()]) {
      await this.handBack(claim, 0).catch(this.context.reportError);
    }
  }

  private async extendNow(claim: DispatchClaim, given: number | undefined): Promise<void> {
    await this.ready;
    const lockMs = given ?? (await this.claimLock(claim));
    const jobId = jobIdOf(claim.threadId);
    const failed = await this.worker.extendJobLocks([jobId], [claim.token], lockMs);
    if (failed.length > 0) {
      this.held.delete(claim.token);
      throw claimLostError(claim);
    }
    if (claim.resourceId !== undefined) {
      await this.context.client.zadd(
        this.context.keys.active(claim.resourceId),
        'XX',
        this.context.clock.now() + lockMs,
        claim.threadId,
      );
    }
  }

  private async completeNow(claim: DispatchClaim): Promise<CompleteResult> {
    const job = await this.job(claim);
    await this.settle(claim, () => job.moveToCompleted(null, claim.token, false));
    const [inbox, tenant] = await this.release(claim, 'completed', false);
    if (inbox === 0) return { rewoken: false };
    await this.context.wake(claim.threadId, tenant ?? undefined);
    return { rewoken: true };
  }

  private async failNow(claim: DispatchClaim, error: unknown, options: FailOptions): Promise<FailResult> {
    const job = await this.job(claim);
    const info = toErrorInfo(error);
    const retryable = options.retryable ?? (LunationError.isInstance(error) && error.isRetryable);
    const attempts = job.opts.attempts ?? this.context.policy.maxAttempts;
    const retry = retryable && job.attemptsMade + 1 < attempts;
    const failure = retry ? new Error(JSON.stringify(info)) : new UnrecoverableError(JSON.stringify(info));
    const now = this.context.clock.now();
    await this.settle(claim, () => job.moveToFailed(failure, claim.token, false));
    await this.release(claim, 'failed', !retry);
    if (!retry) return { deadLettered: true };
    return {
      deadLettered: false,
      retryAt: now + dispatchRetryDelay(this.context.policy.backoff, claim.attempt),
    };
  }

  private async handBackNow(claim: DispatchClaim, delayMs: number): Promise<void> {
    const job = await this.job(claim);
    await this.settle(claim, () =>
      delayMs > 0
        ? job.moveToDelayed(this.context.clock.now() + delayMs, claim.token)
        : job.moveToWait(claim.token),
    );
    await this.release(claim, '', false);
  }

  /** Turns a fetched job into a claim, or gives it back (tenant at its cap). */
  private async accept(job: Job, workerId: string, lockMs: number): Promise<DispatchClaim | undefined> {
    const token = job.token as string;
    const data = job.data as ThreadJobData;
    const now = this.context.clock.now();
    const claim: DispatchClaim = {
      threadId: data.threadId,
      ...(data.resourceId === undefined ? {} : { resourceId: data.resourceId }),
      workerId,
      attempt: job.attemptsMade + 1,
      token,
      claimedAt: now,
    };
    // Marked by BullMQ's stalled check under an older limit (a dispatcher of an earlier version on this queue):
    // a lost claim is not a failure, so the mark is dropped and the thread claimed.
    if (job.deferredFailure) await this.context.client.hdel(this.worker.toKey(job.id as string), 'defa');
    if (lockMs !== this.context.settings.lockMs) {
      const key = this.worker.toKey(job.id as string);
      await Promise.all([
        job.extendLock(token, lockMs),
        this.context.client.hset(key, claimLockField, `${lockMs}:${token}`),
      ]);
    }
    if (data.resourceId !== undefined) {
      const cap = this.context.policy.maxActivePerResource;
      const taken = await this.context.run(
        dispatchScripts.takeSlot,
        [this.context.keys.active(data.resourceId), this.context.keys.activeTenants],
        [data.threadId, now + lockMs, now, cap === Number.POSITIVE_INFINITY ? 'inf' : cap, data.resourceId],
      );
      if (taken !== 1) {
        await job.moveToDelayed(this.context.clock.now() + this.context.settings.resourceRetryMs, token);
        return undefined;
      }
    }
    this.held.set(token, { claim, job, lockMs });
    return claim;
  }

  /** `promise`, failing with `store-unavailable` after `commandTimeoutMs`. */
  private bounded<T>(promise: Promise<T>, what: string, onLate?: (value: T) => void): Promise<T> {
    return withTimeout(
      promise,
      { ms: this.context.settings.commandTimeoutMs, clock: this.context.clock },
      what,
      onLate,
    );
  }

  /** The lock `claim` was made with: held here, or as its job records it (else the dispatcher's default). */
  private async claimLock(claim: DispatchClaim): Promise<number> {
    const held = this.held.get(claim.token);
    if (held !== undefined) return held.lockMs;
    const key = this.worker.toKey(jobIdOf(claim.threadId));
    const stored = await this.context.client.hget(key, claimLockField);
    const separator = stored?.indexOf(':') ?? -1;
    if (stored && separator > 0 && stored.slice(separator + 1) === claim.token) {
      return Number(stored.slice(0, separator));
    }
    return this.context.settings.lockMs;
  }

  /** The claim's job: the one fetched here, or loaded by id for a claim made by another instance. */
  private async job(claim: DispatchClaim): Promise<Job> {
    const held = this.held.get(claim.token);
    if (held !== undefined) return held.job;
    const job = await Job.fromId(this.worker, jobIdOf(claim.threadId));
    if (job === undefined) throw claimLostError(claim);
    return job;
  }

  /** Runs a BullMQ move of the claim's job; a lock or state mismatch means the claim was lost. */
  private async settle(claim: DispatchClaim, move: () => Promise<unknown>): Promise<void> {
    try {
      await move();
    } catch (error) {
      if (isLostClaim(error)) throw claimLostError(claim, error);
      throw error;
    } finally {
      this.held.delete(claim.token);
    }
  }

  /** Frees the claim's tenant slot and counts it; resolves the inbox size and the tenant of its oldest entry. */
  private async release(
    claim: DispatchClaim,
    counter: 'completed' | 'failed' | '',
    dead: boolean,
  ): Promise<[number, string | null]> {
    const { keys } = this.context;
    return (await this.context.run(
      dispatchScripts.release,
      [keys.active(claim.resourceId), keys.stats, keys.inbox(claim.threadId), keys.tenants(claim.threadId)],
      [claim.threadId, counter, claim.resourceId ?? '', dead ? '1' : ''],
    )) as [number, string | null];
  }
}
