import { LunationError, type ResumeDecision } from '@lunation/contract';
import { busyHere } from '../thread-lease.js';
import type { ExecutorCore } from './executor-core.js';
import { LiveRun } from './live-run.js';
import type { Opening, Owner } from './opening.js';
import { normaliseInput, type RunOptions, validateDecisionShapes } from './run-options.js';

// Stage "reserve": the request checked and its thread reserved in this process, before anything is read.

/** Shared empty list for the common run: nothing reads it to change it. */
const NO_DECISIONS: ResumeDecision[] = [];

/** The owner of the common run: no resource, its thread created when new (shared: nothing changes it). */
const ANY_OWNER: Owner = Object.freeze({ resourceId: undefined, ownedOnly: false, create: true });

/** Decisions sent to a thread: their shapes already checked, and who sends them. */
export interface DecisionRequest {
  decisions: ResumeDecision[];
  owner: Owner;
}

/**
 * Checks a run request and reserves its thread in this process (`thread-busy` while a run of it is live); the
 * opening of the run. `buffer`: whether the run's handle buffers its events. `decided`: decisions whose shapes
 * were checked already (else the request's are checked here), and their sender.
 */
export function reserveRun(
  core: ExecutorCore,
  request: RunOptions,
  buffer: boolean,
  decided?: DecisionRequest,
): Opening {
  const { threadId } = request;
  if (typeof threadId !== 'string' || threadId.length === 0) {
    throw new LunationError('invalid-argument', 'run() needs a non-empty threadId');
  }
  const busy = core.runs.byThread.get(threadId);
  if (busy) throw busyHere(threadId, busy.identity.runId);
  if (request.runId !== undefined && (typeof request.runId !== 'string' || request.runId.length === 0)) {
    throw new LunationError('invalid-argument', 'run() needs `runId` to be a non-empty string when given');
  }
  const input = request.input === undefined ? [] : normaliseInput(request.input, core.ids);
  const decisions =
    decided?.decisions ??
    (request.decisions === undefined ? NO_DECISIONS : validateDecisionShapes(request.decisions));
  const snapshot = core.registry.current;
  if (request.agentId !== undefined) snapshot.agent(request.agentId);
  const run = new LiveRun(
    {
      threadId,
      runId: request.runId ?? core.ids.id(),
      agentId: request.agentId ?? '',
      origin: request.parent?.origin ?? 'user',
    },
    core.sinks,
    buffer,
    request.onEvent,
  );
  core.runs.byThread.set(threadId, run);
  const owner =
    decided?.owner ??
    (request.resourceId === undefined && request.existingThread !== true
      ? ANY_OWNER
      : { resourceId: request.resourceId, ownedOnly: false, create: request.existingThread !== true });
  return { run, request, input, decisions, snapshot, owner };
}
