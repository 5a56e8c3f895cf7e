import type { RunRecord } from '@lunation/contract';
import { type ToolCallRecord, toolCallsKey } from '@lunation/runtime';
import { type ClaimedThread, reportAppendFailed } from './claimed-thread.js';
import { claimLog, EventPipe, endLog } from './event-pipe.js';
import { missingEvents, missingRunEnd, readLoggedRun } from './missing-events.js';

/**
 * Gives a finished or waiting run's log what the store committed and the log lacks — the steps and results a
 * worker that died (or whose appends failed) left out, and the run's ending — under a lease of its own on the
 * thread, so a stalled previous holder's late appends are refused after it (`thread-busy` while that holder's
 * lease lasts: the thread is handed back). A finished run whose log could have expired is left alone.
 */
export async function repairLog(thread: ClaimedThread, seen: RunRecord): Promise<void> {
  const { clock, dispatcher, executor } = thread.context;
  if (!seen.termination || expired(thread, seen)) return;
  const { runId, threadId } = seen.identity;
  // The common case: the log ends as the store does (a finished run's with its end mark). Its pipe appends in order,
  // so nothing before is missing.
  const logged = await readLoggedRun(dispatcher, runId);
  const endMarked = logged.ended || seen.status !== 'done';
  if (missingRunEnd(seen, logged.last, clock.now()) === undefined && endMarked) return;
  const fence = await executor.acquireLease(threadId, runId);
  try {
    await repairUnderLease(thread, runId, fence);
  } finally {
    if (fence !== undefined) await executor.releaseLease(threadId, fence);
  }
}

/** Whether a finished run's log could have expired (it stays readable `eventTtlMs` after the run ends). */
function expired(thread: ClaimedThread, run: RunRecord): boolean {
  const { clock, eventTtlMs } = thread.context;
  return run.status === 'done' && clock.now() - run.updatedAt > eventTtlMs;
}

/**
 * Claims the log for the lease, then reads the run again (what the previous holder committed or appended is all
 * there now, and nothing it still has on its way can land) and repairs.
 */
async function repairUnderLease(
  thread: ClaimedThread,
  runId: string,
  fence: number | undefined,
): Promise<void> {
  const { clock, dispatcher, eventTtlMs, store } = thread.context;
  const onAppendFailed = (error: unknown) => reportAppendFailed(thread, runId, error);
  if ((await claimLog(dispatcher, runId, { fence, onAppendFailed, clock })) === 'refused') return;
  const run = await store.getRun(runId);
  if (run === undefined || run.status === 'running' || expired(thread, run)) return;
  const { threadId } = run.identity;
  const logged = await readLoggedRun(dispatcher, runId);
  const state = await store.getThreadState(threadId);
  const settled = state[toolCallsKey.name] as Record<string, ToolCallRecord> | undefined;
  const events = missingEvents(run, await store.listMessages(threadId), logged, settled);
  const end = missingRunEnd(run, events.length > 0 ? undefined : logged.last, clock.now());
  if (end) events.push(end);
  if (events.length > 0) {
    const pipe = new EventPipe(dispatcher, runId, { fence, onAppendFailed, clock });
    for (const event of events) pipe.push(event);
    if ((await pipe.flush()) === 'refused') return;
  } else if (logged.ended) {
    return;
  }
  // A log with every event but no end mark: its holder's mark was refused once this lease claimed the log.
  if (run.status === 'done') await endLog(dispatcher, runId, { ttlMs: eventTtlMs, fence });
}
