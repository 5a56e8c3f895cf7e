import {
  LunationError,
  type Message,
  type ResumeDecision,
  type RunRecord,
  type SuspensionTicket,
} from '@lunation/contract';
import { checkDecisions } from '../decisions.js';
import { createId } from '../id.js';
import { openTickets, type ToolCallRecord, toolCallsKey, upgradeThreadState } from '../loop/call-records.js';
import type { LoadedThread } from '../persistence.js';
import type { RegistrySnapshot } from '../registry.js';
import { appliedDecisionsKey } from '../runtime-keys.js';
import { busyHere } from '../thread-lease.js';
import type { ExecutorCore } from './executor-core.js';
import { launchRun } from './launch-run.js';
import { LiveRun, observed } from './live-run.js';
import {
  type DecisionOutcome,
  type DecisionTarget,
  normaliseInput,
  type RunHandle,
  type RunOptions,
  type SendDecisionsOptions,
  validateDecisionShapes,
} from './run-options.js';
import { settledHandle } from './settled-handle.js';

/** Shared empty lists for the common run: nothing reads them to change them. */
const NO_DECISIONS: ResumeDecision[] = [];
const NO_TICKETS: SuspensionTicket[] = [];
const NO_RECORDS: Readonly<Record<string, ToolCallRecord>> = Object.freeze({});

/** A started run and what became of its decisions. */
interface Started {
  handle: RunHandle;
  outcome: DecisionOutcome;
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
  const threadId = named ? target.threadId : await threadOf(core, target);
  const request: RunOptions = { threadId, decisions };
  if (options.resourceId !== undefined) request.resourceId = options.resourceId;
  if (options.signal !== undefined) request.signal = options.signal;
  const { run, input, snapshot } = reserve(core, request, true, decisions);
  const owner: Owner = {
    resourceId: options.resourceId,
    ownedOnly: options.ownedOnly === true,
    create: false,
  };
  const started = await startRun(core, run, request, input, decisions, snapshot, undefined, owner);
  const { outcome } = started;
  const handle = observed(started.handle);
  if (outcome.applied.length === 0) return outcome;
  if (outcome.openTickets.length > 0) {
    // Some tickets stay open: the run recorded the decisions (C0) and waits again.
    const result = await handle.result;
    return { ...outcome, openTickets: result.openTickets };
  }
  return { ...outcome, run: handle };
}

/**
 * Opens a run: checks the request and reserves the thread, then starts the run: at once, without a promise, in
 * the common case (no store, no decisions, nothing open on the thread); through {@link startRun} otherwise.
 * Throws (synchronously) on a bad request.
 */
export function openRun(
  core: ExecutorCore,
  options: RunOptions,
  buffer: boolean,
): LiveRun | Promise<RunHandle> {
  const { run, input, decisions, snapshot } = reserve(core, options, buffer);
  const { threadId } = options;
  const local = core.local;
  if (local === undefined || decisions.length > 0) {
    return startRun(core, run, options, input, decisions, snapshot).then(handleOf);
  }
  try {
    const thread = opened(threadId, local.openNow(threadId, options.resourceId), {
      resourceId: options.resourceId,
      ownedOnly: false,
      create: true,
    });
    if (thread.threadState[toolCallsKey.name] !== undefined || continuedRun(thread.latestRun)) {
      // Something to settle first (open tickets, a run to continue).
      return startRun(core, run, options, input, decisions, snapshot, thread).then(handleOf);
    }
    return launchRun(core, run, options, thread, input, undefined, NO_DECISIONS, snapshot);
  } catch (error) {
    core.runs.release(run, core.leases);
    throw error;
  }
}

/**
 * Checks a run request and reserves its thread in this process (`thread-busy` while a run of it is live).
 * `checked`: the request's decisions when their shapes were checked already.
 */
function reserve(
  core: ExecutorCore,
  options: RunOptions,
  buffer = true,
  checked?: ResumeDecision[],
): { run: LiveRun; input: Message[]; decisions: ResumeDecision[]; snapshot: RegistrySnapshot } {
  const { threadId } = options;
  if (typeof threadId !== 'string' || threadId.length === 0) {
    throw new LunationError('invalid-argument', 'run() needs a non-empty threadId');
  }
  const busy = core.runs.byThread.get(threadId);
  if (busy) throw busyHere(threadId, busy.identity.runId);
  if (options.runId !== undefined && (typeof options.runId !== 'string' || options.runId.length === 0)) {
    throw new LunationError('invalid-argument', 'run() needs `runId` to be a non-empty string when given');
  }
  const input = options.input === undefined ? [] : normaliseInput(options.input);
  const decisions =
    checked ?? (options.decisions === undefined ? NO_DECISIONS : validateDecisionShapes(options.decisions));
  const snapshot = core.registry.current;
  if (options.agentId !== undefined) snapshot.agent(options.agentId);

  const run = new LiveRun(
    {
      threadId,
      runId: options.runId ?? createId(),
      agentId: options.agentId ?? '',
      origin: options.parent?.origin ?? 'user',
    },
    core.sinks,
    buffer,
    options.onEvent,
  );
  core.runs.byThread.set(threadId, run);
  return { run, input, decisions, snapshot };
}

function handleOf(started: Started): RunHandle {
  return started.handle;
}

/**
 * Starts a run on its reserved thread in the general case: takes the thread's lease, opens the thread (unless
 * `thread` is given), settles what it waits on (decisions, supersede, recovery), then launches the loop; answers
 * the run and what became of its decisions.
 */
async function startRun(
  core: ExecutorCore,
  run: LiveRun,
  options: RunOptions,
  input: Message[],
  decisions: ResumeDecision[],
  snapshot: RegistrySnapshot,
  thread?: LoadedThread,
  owner: Owner = { resourceId: options.resourceId, ownedOnly: false, create: true },
): Promise<Started> {
  const { threadId } = run.identity;
  const { leases, local } = core;
  try {
    if (leases) run.leaseToken = await leases.acquire(threadId, run.identity.runId);
    thread ??= opened(
      threadId,
      local
        ? local.openNow(threadId, options.resourceId, owner.create)
        : await core.persistence.open(threadId, options.resourceId, owner.create),
      owner,
    );
    run.loadedMessages = thread.messages.length;
    if (options.runId !== undefined && input.length > 0 && core.persistence.durable) {
      // Under the lease now, so no late commit of another holder can land after this read: a run with this id
      // in the store was started by this very input (its first commit holds it); applying it again repeats it.
      const applied =
        thread.latestRun?.identity.runId === options.runId
          ? thread.latestRun
          : await core.persistence.getRun(options.runId);
      if (applied !== undefined) throw runApplied(threadId, applied);
    }
    const stored = thread.threadState[toolCallsKey.name] as Record<string, ToolCallRecord> | undefined;
    const records = stored ?? NO_RECORDS;
    run.loadedCalls = stored;
    const tickets = stored ? openTickets(stored) : NO_TICKETS;
    const latest = thread.latestRun;
    let previous: RunRecord | undefined;
    let freshDecisions = NO_DECISIONS;
    let superseded: RunRecord | undefined;
    let outcome: DecisionOutcome;

    if (decisions.length > 0) {
      const applied = new Set((thread.threadState[appliedDecisionsKey.name] ?? []) as string[]);
      const checked = checkDecisions(decisions, records, applied);
      freshDecisions = checked.fresh;
      const undecided = tickets.filter(
        (ticket) => !freshDecisions.some((decision) => decision.ticketId === ticket.id),
      );
      if (freshDecisions.length === 0) {
        // Every decision was applied before: nothing to continue.
        await core.runs.release(run, leases);
        return {
          handle: settledHandle(threadId, latest, tickets),
          outcome: { applied: [], ignored: checked.ignored, openTickets: tickets },
        };
      }
      // The waiting run's loop applies them (its resume stage, C0), also when some tickets stay open.
      if (latest && latest.status !== 'done') previous = latest;
      outcome = {
        applied: freshDecisions.map((decision) => decision.decisionId),
        ignored: checked.ignored,
        openTickets: undecided,
      };
    } else {
      previous = continuedRun(latest);
      outcome = { applied: [], ignored: [], openTickets: tickets === NO_TICKETS ? [] : tickets };
    }
    if (tickets.length > 0 && decisions.length === 0 && previous === undefined) {
      if (input.length === 0) {
        throw new LunationError(
          'invalid-argument',
          `Thread "${threadId}" has ${tickets.length} open ticket(s); send decisions or a new message`,
          { details: { openTickets: tickets.map((ticket) => ticket.id) } },
        );
      }
      // The new input supersedes the waiting run: the loop's resume stage answers its calls and ends it.
      superseded = latest;
    }
    if (previous && previous.identity.runId !== run.identity.runId && leases && run.leaseToken) {
      // Continuing an earlier run: hold the lease in that run's name so thread-busy errors name it (acquiring
      // over this instance's own lease issues a new token).
      run.leaseToken = await leases.acquire(threadId, previous.identity.runId);
    }
    const handle = launchRun(
      core,
      run,
      options,
      thread,
      input,
      previous,
      freshDecisions,
      snapshot,
      superseded,
    );
    return { handle, outcome };
  } catch (error) {
    await core.runs.release(run, leases);
    throw error;
  }
}

/** Who asks to open a thread, and what the thread must be for them. */
interface Owner {
  /** The caller's owner: a thread of another owner is `not-found`. */
  resourceId: string | undefined;
  /** With `resourceId`: a thread without an owner is `not-found` too. */
  ownedOnly: boolean;
  /** Whether a missing thread is created (a run's), or `not-found` (decisions name a thread that must exist). */
  create: boolean;
}

/** The run's thread with its owner checked and its state upgraded to the current layout. */
function opened(threadId: string, thread: LoadedThread, owner: Owner): LoadedThread {
  const { resourceId } = owner;
  if (
    resourceId !== undefined &&
    (thread.resourceId === undefined ? owner.ownedOnly : thread.resourceId !== resourceId)
  ) {
    throw new LunationError('not-found', `Thread "${threadId}" does not exist for this owner`);
  }
  thread.threadState = upgradeThreadState(thread.threadState);
  return thread;
}

/**
 * The thread of a run (a live one, then a stored one) named by `{ runId }`, or of an id that may name a run or
 * a thread; such an id naming both is refused.
 */
async function threadOf(core: ExecutorCore, target: string | { runId: string }): Promise<string> {
  const byRun = typeof target === 'object' && target !== null;
  const id = byRun ? target.runId : target;
  if (typeof id !== 'string' || id.length === 0) {
    throw new LunationError('invalid-argument', 'sendDecisions() needs a non-empty thread or run id');
  }
  const active = core.runs.find(id);
  if (active) return active.identity.threadId;
  const { persistence } = core;
  const run = await persistence.getRun(id);
  if (byRun) {
    if (run) return run.identity.threadId;
    throw new LunationError('not-found', `No run "${id}"`);
  }
  if (run) {
    const { threadId } = run.identity;
    if (threadId !== id && (await persistence.hasThread(id))) {
      throw new LunationError(
        'invalid-argument',
        `"${id}" names both a run (of thread "${threadId}") and a thread; send the decisions by the thread id "${threadId}"`,
        { details: { runId: id, threadId } },
      );
    }
    return threadId;
  }
  if (await persistence.hasThread(id)) return id;
  throw new LunationError('not-found', `No run or thread "${id}"`);
}

/** The run a new run on the thread continues without decisions: one whose process died, or one that waited for its background tasks. */
export function continuedRun(latest: RunRecord | undefined): RunRecord | undefined {
  if (latest?.status === 'running') return latest;
  if (latest?.status === 'waiting' && latest.termination?.type === 'awaiting-tasks') return latest;
  return undefined;
}

/** `store-conflict`: a run request names a run the store has, so its input was applied already. */
export function runApplied(threadId: string, run: RunRecord): LunationError {
  const { runId } = run.identity;
  return new LunationError(
    'store-conflict',
    `Run "${runId}" of thread "${threadId}" is already in the store (${run.status}): its input was applied by its first commit; continue or read that run instead of starting it again`,
    { details: { threadId, runId, status: run.status } },
  );
}
