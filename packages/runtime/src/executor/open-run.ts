import type { ResumeDecision } from '@lunation/contract';
import { toolCallsKey } from '../loop/call-records.js';
import type { ExecutorCore } from './executor-core.js';
import { findThread } from './find-thread.js';
import { launchRun } from './launch-run.js';
import { leaseAsContinued, leaseThread } from './lease-thread.js';
import { type LiveRun, observed } from './live-run.js';
import { loadThread, loadThreadNow } from './load-thread.js';
import type { LoadedOpening, Opening } from './opening.js';
import { reserveRun } from './reserve-run.js';
import type {
  DecisionOutcome,
  DecisionTarget,
  RunHandle,
  RunOptions,
  SendDecisionsOptions,
} from './run-options.js';
import { continuedRun, settleThread } from './settle-thread.js';

// The protocol of opening a run, top to bottom: reserve (reserve-run.ts) → lease (lease-thread.ts) → load
// (load-thread.ts) → settle (settle-thread.ts) → launch (launch-run.ts). One value, the `Opening`, passes from
// stage to stage; each stage answers what it decided, and only the launch makes the run active. A failure at
// any stage releases the thread (and its lease) and changes nothing in the store.

/**
 * Opens a run: checks the request and reserves the thread, then starts the run: at once, without a promise, in
 * the common case (no store, no decisions, nothing open on the thread); through {@link startRun} otherwise.
 * Throws (synchronously) on a bad request.
 */
export function openRun(
  core: ExecutorCore,
  request: RunOptions,
  buffer: boolean,
): LiveRun | Promise<RunHandle> {
  const opening = reserveRun(core, request, buffer);
  if (opening.decisions.length > 0) return startRun(core, opening).then(handleOf);
  let loaded: LoadedOpening | undefined;
  try {
    loaded = loadThreadNow(core, opening);
    if (loaded === undefined) return startRun(core, opening).then(handleOf);
    const { thread } = loaded;
    if (thread.threadState[toolCallsKey.name] === undefined && !continuedRun(thread.latestRun)) {
      return launchRun(core, loaded);
    }
  } catch (error) {
    core.runs.release(opening.run, core.leases);
    throw error;
  }
  // Something to settle first (open tickets, a run to continue).
  return startRun(core, opening, loaded).then(handleOf);
}

/**
 * Applies decisions, their shapes checked at the door, to the open tickets of a thread (or of the run with that
 * id), in one line: the thread found, reserved and leased, its owner and the decisions checked against its open
 * tickets, then the run launched — its loop's resume stage applies them (C0, with an in-flight ledger entry for
 * each approved call). Once every ticket is decided the outcome carries the resumed run; while some stay open,
 * the run has recorded the decisions and waits again.
 */
export async function decideOn(
  core: ExecutorCore,
  target: DecisionTarget,
  decisions: ResumeDecision[],
  options: SendDecisionsOptions,
): Promise<DecisionOutcome> {
  const named = typeof target === 'object' && target !== null && 'threadId' in target;
  const threadId = named ? target.threadId : await findThread(core, target);
  const request: RunOptions = { threadId, decisions };
  if (options.resourceId !== undefined) request.resourceId = options.resourceId;
  if (options.signal !== undefined) request.signal = options.signal;
  const owner = { resourceId: options.resourceId, ownedOnly: options.ownedOnly === true, create: false };
  const started = await startRun(core, reserveRun(core, request, true, { decisions, owner }));
  const { outcome } = started;
  const handle = observed(started.handle);
  if (outcome.applied.length === 0) return outcome;
  if (outcome.openTickets.length > 0) {
    // Some tickets stay open: the run records the decisions (C0) and waits again. One that ended otherwise (its
    // lease lost, its commit failed) may not have recorded them: the caller follows it as any resumed run.
    const result = await handle.result;
    if (result.status !== 'waiting') return { ...outcome, run: handle };
    return { ...outcome, openTickets: result.openTickets };
  }
  return { ...outcome, run: handle };
}

/** A started run and what became of its decisions. */
interface Started {
  handle: RunHandle;
  outcome: DecisionOutcome;
}

/**
 * Starts a reserved run in the general case: leases the thread, loads it (unless `loaded` has it), settles
 * what it waits on, and launches the loop; the run, and what became of its decisions.
 */
async function startRun(core: ExecutorCore, reserved: Opening, loaded?: LoadedOpening): Promise<Started> {
  let leaseToken: number | undefined;
  try {
    let opening = loaded;
    if (opening === undefined) {
      const leased = await leaseThread(core, reserved);
      leaseToken = leased.leaseToken;
      opening = await loadThread(core, leased);
    }
    const settlement = settleThread(opening, core);
    if ('settled' in settlement) {
      const held = leaseToken;
      leaseToken = undefined;
      await core.runs.release(reserved.run, core.leases, held);
      return { handle: settlement.settled, outcome: settlement.outcome };
    }
    const launching = await leaseAsContinued(core, settlement.launch);
    leaseToken = launching.leaseToken;
    return { handle: launchRun(core, launching), outcome: settlement.outcome };
  } catch (error) {
    await core.runs.release(reserved.run, core.leases, leaseToken);
    throw error;
  }
}

function handleOf(started: Started): RunHandle {
  return started.handle;
}
