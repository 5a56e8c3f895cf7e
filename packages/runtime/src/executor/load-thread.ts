import { LunationError, type RunRecord } from '@lunation/contract';
import { ownsThread } from '../decision-admission.js';
import { upgradeThreadState } from '../loop/call-records.js';
import type { LoadedThread } from '../persistence.js';
import type { ExecutorCore } from './executor-core.js';
import type { LoadedOpening, Opening, Owner } from './opening.js';

// Stage "load": the thread read (under its lease, with a store), its owner checked, its state in the current
// layout; a request naming a run the store already has is refused here.

/** The opening with its thread loaded from the executor's persistence. */
export async function loadThread(core: ExecutorCore, opening: Opening): Promise<LoadedOpening> {
  const { run, request, owner } = opening;
  const { threadId } = run.identity;
  const { local, persistence } = core;
  const thread = opened(
    threadId,
    local
      ? local.openNow(threadId, request.resourceId, owner.create)
      : await persistence.open(threadId, request.resourceId, owner.create),
    owner,
  );
  if (request.runId !== undefined && opening.input.length > 0 && persistence.durable) {
    // Under the lease now, so no late commit of another holder can land after this read: a run with this id
    // in the store was started by this very input (its first commit holds it); applying it again repeats it.
    const applied =
      thread.latestRun?.identity.runId === request.runId
        ? thread.latestRun
        : await persistence.getRun(request.runId);
    if (applied !== undefined) throw runApplied(threadId, applied);
  }
  return { ...opening, thread };
}

/** The opening with its thread loaded at once, from this process's memory (`core.local`; no store). */
export function loadThreadNow(core: ExecutorCore, opening: Opening): LoadedOpening | undefined {
  const { local } = core;
  if (local === undefined) return undefined;
  const { run, request, owner } = opening;
  const { threadId } = run.identity;
  return { ...opening, thread: opened(threadId, local.openNow(threadId, request.resourceId), owner) };
}

/** The run's thread with its owner checked and its state upgraded to the current layout. */
function opened(threadId: string, thread: LoadedThread, owner: Owner): LoadedThread {
  if (!ownsThread(thread, owner)) {
    throw new LunationError('not-found', `Thread "${threadId}" does not exist for this owner`);
  }
  const threadState = upgradeThreadState(thread.threadState);
  return threadState === thread.threadState ? thread : { ...thread, threadState };
}

/** `store-conflict`: a run request names a run the store has, so its input was applied already. */
function runApplied(threadId: string, run: RunRecord): LunationError {
  const { runId } = run.identity;
  return new LunationError(
    'store-conflict',
    `Run "${runId}" of thread "${threadId}" is already in the store (${run.status}): its input was applied by its first commit; continue or read that run instead of starting it again`,
    { details: { threadId, runId, status: run.status } },
  );
}
