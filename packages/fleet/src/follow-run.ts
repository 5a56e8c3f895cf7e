import {
  type CancelRequest,
  LunationError,
  type ResumeDecision,
  type SuspensionTicket,
} from '@lunation/contract';
import type { RunHandle, RunResult } from '@lunation/runtime';
import { type ClaimedThread, reportAppendFailed } from './claimed-thread.js';
import { claimLog, endLog, type PipedRun, type PipeOutcome, pipeEvents } from './event-pipe.js';
import type { UnnumberedEvent } from './missing-events.js';

/** How a followed run came to run here, and what its log lacked before it. */
export interface FollowOptions {
  how: 'started' | 'resumed' | 'recovered';
  /**
   * What the log lacked of the run's committed work, appended before the run's own events: read once the log is
   * claimed for the run's lease, so that a stalled previous holder's late appends cannot land.
   */
  prefix?: () => Promise<readonly UnnumberedEvent[]>;
  /** A new run's submission: how long it waited to be claimed, in milliseconds. */
  waitedMs?: number;
}

/** The ids a followed run's facts carry. */
interface RunIds {
  runId: string;
  leaseToken?: number;
}

/**
 * Copies the run's events to its log (after `prefix`, what the log lacked of the run's committed work, read once
 * the log is claimed for the run's lease so that a stalled previous holder's late appends cannot land), fenced
 * by the run's lease, until it ends; marks a finished run's log ended and clears a cancel it handled. A run
 * that stopped because its lease went stale throws `lease-lost`: its `run-end` (status `running`) never reaches
 * the log, and the thread is handed back to whoever holds it now. A waiting run's log stays open, so a client
 * following it sees the resume's events whichever worker runs it.
 */
export async function followRun(
  thread: ClaimedThread,
  handle: RunHandle,
  options: FollowOptions,
): Promise<void> {
  const { how, prefix, waitedMs } = options;
  const runId = handle.identity.runId;
  const fence = thread.context.executor.loadedRun(handle)?.leaseToken;
  const ids: RunIds = { runId, ...(fence === undefined ? {} : { leaseToken: fence }) };
  thread.context.report({
    level: 'info',
    event: 'run-started',
    message: `Run "${runId}" of thread "${thread.claim.threadId}" ${how} here`,
    how,
    ...ids,
    ...(waitedMs === undefined ? {} : { waitedMs }),
  });
  const { piped, result } = await pipeRun(thread, handle, fence, prefix);
  if (result.status === 'running') return leaseLost(thread, piped, ids);
  reportEnded(thread, result, ids);
  await logEnding(thread, piped, result, ids);
  const holding = await thread.cancel.afterRun(runId, result);
  if (holding) await declineOpenTickets(thread, holding, result.openTickets);
}

/** Pipes the run's events to its log while it runs (a cancel request may stop it meanwhile). */
async function pipeRun(
  thread: ClaimedThread,
  handle: RunHandle,
  fence: number | undefined,
  prefix: FollowOptions['prefix'],
): Promise<{ piped: PipedRun; result: RunResult }> {
  const { clock, dispatcher } = thread.context;
  const runId = handle.identity.runId;
  thread.cancel.following(handle);
  try {
    const onAppendFailed = (error: unknown) => reportAppendFailed(thread, runId, error);
    if (prefix !== undefined) await claimLog(dispatcher, runId, { fence, onAppendFailed, clock });
    const piped = await pipeEvents(dispatcher, runId, handle.events, {
      fence,
      prefix: prefix === undefined ? [] : await prefix(),
      onAppendFailed,
      clock,
    });
    return { piped, result: await handle.result };
  } finally {
    thread.cancel.following(undefined);
  }
}

/** The run stopped because its lease went stale: its `run-end` (status `running`) never reaches the log. */
async function leaseLost(thread: ClaimedThread, piped: PipedRun, ids: RunIds): Promise<never> {
  const { runId } = ids;
  const { threadId } = thread.claim;
  // The run goes on elsewhere.
  await piped.pipe.flush();
  thread.context.report({
    level: 'warn',
    event: 'lease-lost',
    message: `Run "${runId}" stopped: this worker lost the lease of thread "${threadId}"`,
    ...ids,
  });
  throw new LunationError('lease-lost', `Run "${runId}" stopped: this worker lost its thread's lease`, {
    details: { threadId, runId },
  });
}

function reportEnded(thread: ClaimedThread, result: RunResult, ids: RunIds): void {
  thread.context.report({
    level: result.termination.type === 'error' ? 'warn' : 'info',
    event: 'run-ended',
    message: `Run "${ids.runId}" of thread "${thread.claim.threadId}" ended ${result.status} (${result.termination.type})`,
    ...ids,
    status: result.status,
    termination: result.termination.type,
    steps: result.steps,
  });
}

/** Gives the log the run's ending (an error ending as the store has it) and marks a finished run's log ended. */
async function logEnding(
  thread: ClaimedThread,
  piped: PipedRun,
  result: RunResult,
  ids: RunIds,
): Promise<void> {
  const { dispatcher, eventTtlMs } = thread.context;
  let end: UnnumberedEvent | undefined = piped.end;
  if (result.termination.type === 'error') {
    await piped.pipe.flush(); // what the run did reaches its log, whatever its ending turns out to be
    end = await storedEnding(thread, ids.runId, end);
  }
  if (end !== undefined) piped.pipe.push(end);
  const outcome: PipeOutcome = await piped.pipe.flush();
  if (result.status === 'done' && outcome === 'appended') {
    await endLog(dispatcher, ids.runId, { ttlMs: eventTtlMs, fence: ids.leaseToken });
  }
}

/**
 * The `run-end` the log of a run that ended with an error gets. An error ending may be one whose own commit
 * failed, so the store decides: only an ending it has as the run's own (that status, an error) is logged here.
 * Otherwise the run's last commit did not land as it says — the store has it `running`, or not at all (its
 * first commit failed too), or still `waiting` (a resume whose first commit failed), or ended otherwise (an
 * ambiguous commit that did land) — and the thread is handed back without acknowledging the submission: the
 * run goes on from the store or from its submission applied again, and its log gets the store's ending then.
 */
async function storedEnding(
  thread: ClaimedThread,
  runId: string,
  own: UnnumberedEvent | undefined,
): Promise<UnnumberedEvent | undefined> {
  const stored = await thread.context.store.getRun(runId);
  if (own?.type === 'run-end' && stored?.status === own.status && stored.termination?.type === 'error')
    return own;
  throw new LunationError(
    'lease-lost',
    `Run "${runId}" could not commit its end; it goes on from the store`,
    {
      details: { threadId: thread.claim.threadId, runId },
    },
  );
}

/** The cancel came as the run suspended: it still holds. The run's open tickets are declined and it ends. */
async function declineOpenTickets(
  thread: ClaimedThread,
  handled: CancelRequest,
  openTickets: readonly SuspensionTicket[],
): Promise<void> {
  const decisions = openTickets.map(
    (ticket): ResumeDecision => ({
      decisionId: `cancel-${handled.id}-${ticket.id}`,
      ticketId: ticket.id,
      action: 'cancel',
      reason: handled.reason,
    }),
  );
  const signal = AbortSignal.abort(handled.reason);
  const outcome = await thread.context.executor.decide({ threadId: thread.claim.threadId }, decisions, {
    signal,
  });
  if (outcome.run) await followRun(thread, outcome.run, { how: 'resumed' });
}
