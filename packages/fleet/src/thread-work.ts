import { type DispatchClaim, LunationError } from '@lunation/contract';
import { applySubmission } from './apply-submission.js';
import type { ClaimedThread, ThreadWorkContext } from './claimed-thread.js';
import { recoverLatestRun } from './run-recovery.js';
import { ThreadCancel } from './thread-cancel.js';

export type { ThreadWorkContext, ThreadWorkFact } from './claimed-thread.js';

/** How the work on a claimed thread ended. */
export type ThreadWorkOutcome =
  /** The inbox is empty: complete the claim. */
  | { type: 'drained' }
  /** Another process holds the thread's lease: hand the claim back for this long. */
  | { type: 'busy'; retryAfterMs: number };

/**
 * The work a claim stands for, in the order the store needs it: first a run some dead worker left `running` is
 * continued from the store ({@link recoverLatestRun}), then each submission of the inbox is applied
 * ({@link applySubmission}) and acknowledged, oldest first, until the inbox is empty. The thread's lease (taken by
 * the runtime for every run) decides who runs it; a submission whose run is already in the store (its worker died
 * after the run's first commit) is not applied twice.
 *
 * Slow is not dead: a run that stops because its lease went stale (this process stalled; another may hold the
 * thread now) leaves its submission unacknowledged and hands the thread back, so whoever holds the lease
 * continues it. The log gets the committed work a dead or refused worker left out (see `missingEvents`) before
 * the run continues, and its events are fenced by the lease they were made under (see `followRun`).
 *
 * A cancel request acts only on the run it names: the active run, or the run about to start or be resumed
 * ({@link ThreadCancel}).
 */
export class ThreadWork {
  private readonly thread: ClaimedThread;

  constructor(context: ThreadWorkContext, claim: DispatchClaim) {
    const cancel = new ThreadCancel(context.dispatcher, context.store, claim.threadId);
    this.thread = { context, claim, cancel };
  }

  /** Does the work; a thread held elsewhere ends it early with `busy`. Other failures reject. */
  async run(): Promise<ThreadWorkOutcome> {
    const { context, claim, cancel } = this.thread;
    const { dispatcher } = context;
    const { threadId } = claim;
    const watch = await dispatcher.watchCancel(threadId, (request) => cancel.requested(request));
    try {
      const busy = await busyFrom(() => recoverLatestRun(this.thread));
      if (busy) return busy;
      for (;;) {
        const entries = await dispatcher.pending(threadId);
        if (entries.length === 0) break;
        for (const entry of entries) {
          // A worker that stalled past its claim applies nothing more (`claim-lost`): the thread is another's now.
          await extendClaim(this.thread);
          const held = await busyFrom(() => applySubmission(this.thread, entry));
          if (held) return held;
          await dispatcher.acknowledge(threadId, [entry.id]);
        }
      }
      await cancel.clearIfEnded();
      return { type: 'drained' };
    } finally {
      watch.close();
    }
  }
}

/**
 * Extends the claim, then checks it is still provably held: the answer may reach a process that stalled after
 * sending it, once the lock ran out and another worker took the thread (`claim-lost`, as when the extension is
 * refused). Held means confirmed less than three quarters of the lock ago on this process's monotonic clock (no
 * worker can claim the thread before the lock runs out).
 */
async function extendClaim({ context, claim }: ClaimedThread): Promise<void> {
  const { clock, claimLockMs } = context;
  const sentAt = clock.monotonic();
  await context.dispatcher.extend(claim, claimLockMs);
  const tookMs = clock.monotonic() - sentAt;
  if (tookMs < claimLockMs * 0.75) return;
  throw new LunationError(
    'claim-lost',
    `The claim of thread "${claim.threadId}" was extended, but the answer came ${tookMs} ms later (lock ${claimLockMs} ms): another worker may hold the thread now; this one applies nothing more`,
    { details: { threadId: claim.threadId, tookMs, claimLockMs } },
  );
}

/** Runs `work`; a `thread-busy` from another process's lease (or a lease lost to it) becomes a hand-back. */
async function busyFrom(work: () => Promise<void>): Promise<ThreadWorkOutcome | undefined> {
  try {
    await work();
    return undefined;
  } catch (error) {
    if (LunationError.hasCode(error, 'lease-lost')) return { type: 'busy', retryAfterMs: 1_000 };
    if (!LunationError.hasCode(error, 'thread-busy')) throw error;
    // Poll at least every second: a live holder that finishes early frees the thread before its lease expires.
    const retryAfterMs = Number(error.details?.retryAfterMs);
    const delay = Number.isFinite(retryAfterMs) ? Math.min(Math.max(50, retryAfterMs), 1_000) : 1_000;
    return { type: 'busy', retryAfterMs: delay };
  }
}
