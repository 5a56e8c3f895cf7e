import { LunationError, type RunRecord } from '@lunation/contract';
import type { ExecutorCore } from './executor-core.js';
import type { Opening } from './opening.js';

// Stage "lease": the thread's lease taken (with a store) before the thread is read, so no late commit of an
// earlier holder can land after the read.

/** The opening holding the thread's lease in the run's name (unchanged without a store). */
export async function leaseThread<T extends Opening>(core: ExecutorCore, opening: T): Promise<T> {
  const { leases } = core;
  if (!leases) return opening;
  const { threadId, runId } = opening.run.identity;
  return { ...opening, leaseToken: await leases.acquire(threadId, runId) };
}

/**
 * The opening holding the lease in the name of the earlier run it continues, so thread-busy errors name that
 * run (acquiring over this instance's own lease issues a new token); unchanged when it continues none.
 *
 * The thread was read under the lease taken first. A new token would cover that read even if this process
 * stalled past the lease meanwhile and another one took the thread, committed and let it go: so the lease must
 * still be provably this process's when it is taken again (fresh on its own clock, or renewed now: the store
 * accepts a renewal only while no later token was issued), or the opening fails with `lease-lost` and the caller
 * opens it again from a new read.
 */
export async function leaseAsContinued<T extends Opening>(core: ExecutorCore, opening: T): Promise<T> {
  const { leases } = core;
  const previous: RunRecord | undefined = opening.previous;
  if (!leases || opening.leaseToken === undefined || !previous) return opening;
  if (previous.identity.runId === opening.run.identity.runId) return opening;
  const { threadId } = opening.run.identity;
  if (!(await leases.confirm(threadId, opening.leaseToken))) {
    throw new LunationError(
      'lease-lost',
      `The lease of thread "${threadId}" lapsed while it was being read (a stalled process): open the run again`,
      { details: { threadId, runId: previous.identity.runId } },
    );
  }
  return {
    ...opening,
    leaseToken: await leases.acquire(opening.run.identity.threadId, previous.identity.runId),
  };
}
