import {
  LunationError,
  type RunStatus,
  type SuspensionTicket,
  statusForTermination,
  type TerminationReason,
  toErrorInfo,
} from '@lunation/contract';
import { traceContextKey } from '../runtime-keys.js';
import type { Checkpointer } from './checkpointer.js';
import type { RunDeadline } from './run-deadline.js';
import type { RunResult, RunScope } from './run-scope.js';
import { isLunationError } from './storable.js';
import type { ToolCalls } from './tool-calls.js';

/** What the run-end stage works with: the run, its commits, its tool calls and its deadline. */
export interface RunEndParts {
  scope: RunScope;
  checkpointer: Checkpointer;
  toolCalls: ToolCalls;
  deadline: RunDeadline | undefined;
}

/**
 * The run's end: open calls answered (a finished run leaves none), RunEnd hooks, the last commit with the final
 * status, then `run-end`. A run that lost its thread's lease, or whose last commit was fenced out, is left to
 * the process holding the thread now ({@link leftToOthers}).
 */
export async function finishRun(parts: RunEndParts, reason: TerminationReason): Promise<RunResult> {
  const { scope, checkpointer, toolCalls } = parts;
  if (scope.leaseLost) return await leftToOthers(parts, scope.signal.reason);
  let termination = reason;
  const status = statusForTermination(termination);
  // A finished run leaves no call unanswered: nothing runs later behind the user's back.
  if (status === 'done') toolCalls.answerOpenCalls(openCallsAnswer(termination));
  if (scope.engine.isActive('RunEnd')) await runEndHooks(scope, termination);
  scope.progressChanged();
  if (status === 'waiting') keepTraceContext(scope);
  try {
    await checkpointer.commitRunEnd(status, termination);
  } catch (error) {
    // Fenced out: another process holds the thread now and continues the run from the store.
    if (isLunationError(error) && (error.code === 'stale-lease' || error.code === 'lease-lost')) {
      scope.options.controller?.abort(asLeaseLost(error));
      return await leftToOthers(parts, error);
    }
    scope.emitError(error);
    if (termination.type !== 'error') termination = { type: 'error', error: toErrorInfo(error) };
  }
  release(parts);
  if (scope.progress.step > 0) scope.emitStepEnd();
  return announceEnd(scope, status, termination, checkpointer.currentTickets());
}

/**
 * The run lost its thread's lease: it stops here and commits nothing (no run-end hooks, no run-end commit; only
 * the results of calls that finished go to the ledger), so the store keeps it `running` for the process that
 * holds the thread now. Its `run-end` says `running`, with the lease loss as the termination.
 */
async function leftToOthers(parts: RunEndParts, reason: unknown): Promise<RunResult> {
  const { scope, checkpointer } = parts;
  const termination: TerminationReason = { type: 'error', error: toErrorInfo(reason) };
  if (scope.durable) await checkpointer.saveFinished();
  release(parts);
  return announceEnd(scope, 'running', termination, checkpointer.currentTickets());
}

/**
 * Tells the run's observer and listeners that the run ended; its result (written out field by field: this runs
 * once per run, and object spreads cost more).
 */
function announceEnd(
  scope: RunScope,
  status: RunStatus,
  termination: TerminationReason,
  openTickets: SuspensionTicket[],
): RunResult {
  const { finalText, progress } = scope;
  const steps = progress.step;
  const usage = progress.usage;
  scope.instrumentation?.runEnded({ status, termination, finalText, steps, usage, openTickets });
  if (scope.listening) {
    const timestamp = scope.clock.now();
    scope.emit({ type: 'run-end', status, termination, finalText, steps, usage, openTickets, timestamp });
  }
  const messages = scope.runMessages;
  return scope.output === undefined || status === 'running'
    ? { identity: scope.identity, status, termination, finalText, steps, usage, openTickets, messages }
    : {
        identity: scope.identity,
        status,
        termination,
        finalText,
        steps,
        usage,
        openTickets,
        messages,
        output: scope.output,
      };
}

/** The answer an open call gets when the run ends without running it. */
function openCallsAnswer(termination: TerminationReason): string {
  return termination.type === 'cancelled' ||
    (termination.type === 'stopped' && termination.code === 'timeout')
    ? 'the run was stopped before this call finished'
    : 'the run ended before this call finished';
}

/** RunEnd hooks (not for a run cancelled by its signal); a failing hook is reported, not fatal. */
async function runEndHooks(scope: RunScope, termination: TerminationReason): Promise<void> {
  try {
    if (termination.type !== 'cancelled' || !scope.signal.aborted)
      await scope.engine.run('RunEnd', scope.base());
  } catch (error) {
    scope.emitError(error);
  }
}

/** The run waits: whoever resumes it, in any process, links to this run through the stored context. */
function keepTraceContext(scope: RunScope): void {
  const carrier = scope.instrumentation?.suspendContext();
  if (carrier) scope.state.write([{ key: traceContextKey, update: { ...carrier } }]);
}

function asLeaseLost(error: LunationError): LunationError {
  if (error.code === 'lease-lost') return error;
  return new LunationError('lease-lost', `The run's last commit was fenced out: ${error.message}`, {
    cause: error,
  });
}

/** The run's timers: the tool clock and the deadline. */
function release(parts: RunEndParts): void {
  parts.toolCalls.dispose();
  parts.deadline?.clear();
}
