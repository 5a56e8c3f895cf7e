import { type InboxEntry, type InputRequest, LunationError } from '@lunation/contract';
import type { ClaimedThread } from './claimed-thread.js';
import { followRun } from './follow-run.js';
import { repairLog } from './log-repair.js';
import { recoverLatestRun } from './run-recovery.js';

/** Errors that say the submission itself is wrong: retrying it cannot help. */
const rejections = new Set(['invalid-argument', 'decision-invalid', 'unknown-ticket', 'not-found']);

/**
 * Applies one submission of the claimed thread's inbox: decisions resume the waiting run, input starts a run
 * (unless its run is in the store already), a `continue` was the claim's recovery. A malformed one is reported
 * and dropped.
 */
export async function applySubmission(thread: ClaimedThread, entry: InboxEntry): Promise<void> {
  try {
    await applyRequest(thread, entry);
  } catch (error) {
    if (await committedMeanwhile(thread, entry, error)) return;
    if (!LunationError.isInstance(error) || !rejections.has(error.code)) throw error;
    thread.context.onRejected(entry, error);
  }
}

async function applyRequest(thread: ClaimedThread, entry: InboxEntry): Promise<void> {
  const { executor } = thread.context;
  const { request } = entry;
  // The claim's recovery has continued (or repaired the log of) the stranded run already.
  if (request.type === 'continue') return;
  if (request.type === 'decisions') {
    await thread.cancel.read();
    const signal = await thread.cancel.waitingRunSignal();
    const outcome = await executor.decide({ threadId: entry.threadId }, request.decisions, signal);
    if (outcome.run) await followRun(thread, outcome.run, { how: 'resumed' });
    // Nothing left to decide: a holder applied these decisions after the claim's recovery looked, and may have
    // lost the thread (or died) with the resumed run still `running`; continued here, or it would stay stranded.
    else if (outcome.applied.length === 0) await recoverLatestRun(thread);
    // Recorded, the run waiting again for its other tickets: what it did (the decided calls' results, its new
    // ending) goes to its log now, before anything of a later resume.
    else await repairWaitingLog(thread);
    return;
  }
  if (await appliedBefore(thread, request.runId)) return;
  await startRun(thread, entry, request);
}

/** Gives the log of the thread's run, waiting again after decisions, what they committed. */
async function repairWaitingLog(thread: ClaimedThread): Promise<void> {
  const latest = await thread.context.store.getLatestRun(thread.claim.threadId);
  if (latest?.status === 'waiting') await repairLog(thread, latest);
}

/**
 * Whether the input's run is in the store already: applied by a worker that died (or lost the thread) before
 * acknowledging it. The run's first commit holds the input; a finished run's log gets what it lacks. One found
 * running is continued: its first commit may have landed after the claim's recovery looked (this claim was
 * delivered again while its holder started the run) — while the holder lives that is `thread-busy`, and the
 * thread is handed back with the submission unacknowledged.
 */
async function appliedBefore(thread: ClaimedThread, runId: string | undefined): Promise<boolean> {
  if (runId === undefined) return false;
  const applied = await thread.context.store.getRun(runId);
  if (applied === undefined) return false;
  if (applied.status === 'running') await recoverLatestRun(thread);
  else await repairLog(thread, applied);
  return true;
}

/** Starts the input's run and follows it into its log. */
async function startRun(thread: ClaimedThread, entry: InboxEntry, request: InputRequest): Promise<void> {
  await thread.cancel.read();
  const handle = await thread.context.executor.run({
    threadId: entry.threadId,
    // The front created the thread before it submitted: a thread not in the store was deleted since.
    existingThread: true,
    input: request.input,
    ...(request.agentId === undefined ? {} : { agentId: request.agentId }),
    ...(request.runId === undefined ? {} : { runId: request.runId }),
    ...(entry.resourceId === undefined ? {} : { resourceId: entry.resourceId }),
    ...(request.frontendTools === undefined ? {} : { frontendTools: request.frontendTools }),
    ...thread.cancel.signalFor(request.runId),
  });
  const waitedMs = Math.max(0, thread.claim.claimedAt - entry.submittedAt);
  await followRun(thread, handle, { how: 'started', waitedMs });
}

/**
 * Whether `error` says the input's run was committed by a holder whose commit landed after the check for it: then
 * it is continued, or its log given what it lacks, as for a submission found applied.
 */
async function committedMeanwhile(
  thread: ClaimedThread,
  entry: InboxEntry,
  error: unknown,
): Promise<boolean> {
  const { request } = entry;
  if (
    request.type !== 'input' ||
    !LunationError.hasCode(error, 'store-conflict') ||
    request.runId === undefined ||
    error.details?.runId !== request.runId
  ) {
    return false;
  }
  const applied = await thread.context.store.getRun(request.runId);
  if (applied?.status === 'running') await recoverLatestRun(thread);
  else if (applied !== undefined) await repairLog(thread, applied);
  return true;
}
