import { LunationError } from '@lunation/contract';
import type { RunHandle } from '@lunation/runtime';
import type { ClaimedThread } from './claimed-thread.js';
import { followRun } from './follow-run.js';
import { repairLog } from './log-repair.js';
import { missingEvents, readLoggedRun } from './missing-events.js';

/**
 * Continues the thread's latest run if a worker that died (or stalled and lost its lease) left it running, its
 * log first given the committed work it lacks; gives a finished or waiting run's log the ending the store has.
 */
export async function recoverLatestRun(thread: ClaimedThread): Promise<void> {
  const { store, executor, dispatcher } = thread.context;
  const { threadId } = thread.claim;
  const latest = await store.getLatestRun(threadId);
  if (latest === undefined) return;
  if (latest.status !== 'running') {
    await repairLog(thread, latest);
    return;
  }
  const runId = latest.identity.runId;
  const handle = await continueRun(thread, runId);
  if (handle === undefined) return;
  // Read once the log is claimed for the run's new lease: nothing the previous holder commits or appends later
  // can land. Only what was committed before this run loaded the thread is the previous holder's; the run
  // reports the rest itself.
  const loaded = executor.loadedRun(handle);
  const loadedMessages = loaded?.messageCount;
  const prefix = async () =>
    missingEvents(
      latest,
      await store.listMessages(threadId, loadedMessages === undefined ? {} : { toSeq: loadedMessages }),
      await readLoggedRun(dispatcher, runId),
      loaded?.callRecords,
    );
  await followRun(thread, handle, { how: 'recovered', prefix });
}

/**
 * Continues the stranded run from the store; undefined when the previous holder finished it meanwhile, or the
 * thread was deleted since it was read (a missing thread is never created here: that would bring back a thread
 * the user deleted, without the ledger that went with it).
 */
async function continueRun(thread: ClaimedThread, runId: string): Promise<RunHandle | undefined> {
  const { store, executor } = thread.context;
  try {
    await thread.cancel.read();
    const { threadId } = thread.claim;
    return await executor.run({ threadId, existingThread: true, ...thread.cancel.signalFor(runId) });
  } catch (error) {
    if (LunationError.hasCode(error, 'not-found')) return undefined;
    // The previous holder finished it meanwhile (a redelivered claim): nothing to continue, only its log.
    const now = LunationError.hasCode(error, 'invalid-argument') ? await store.getRun(runId) : undefined;
    if (now === undefined || now.status === 'running') throw error;
    await repairLog(thread, now);
    return undefined;
  }
}
