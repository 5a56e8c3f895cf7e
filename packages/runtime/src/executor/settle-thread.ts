import {
  LunationError,
  type ResumeDecision,
  type RunRecord,
  type SuspensionTicket,
} from '@lunation/contract';
import { admitDecisions } from '../decision-admission.js';
import { openTickets, type ToolCallRecord, toolCallsKey } from '../loop/call-records.js';
import type { LoadedOpening } from './opening.js';
import type { DecisionOutcome, RunHandle } from './run-options.js';
import type { Seams } from './seams.js';
import { settledHandle } from './settled-handle.js';

// Stage "settle": what the loaded thread waits on, decided before the loop runs: decisions checked against its
// open tickets, an earlier run to continue, a waiting run that new input supersedes.

const NO_DECISIONS: ResumeDecision[] = [];
const NO_TICKETS: SuspensionTicket[] = [];

/** What the settle stage decided: the opening to launch, or a handle when there is nothing to run. */
export type Settlement =
  | { readonly launch: LoadedOpening; readonly outcome: DecisionOutcome }
  | { readonly settled: RunHandle; readonly outcome: DecisionOutcome };

/**
 * Settles what the thread waits on: with decisions, the fresh ones (checked against its open tickets) and the
 * waiting run they resume, or a settled handle when every decision was applied before; without, the run it
 * continues (one cut off, one that waited for its tasks), or the waiting run its new input supersedes.
 */
export function settleThread(opening: LoadedOpening, seams: Seams): Settlement {
  if (opening.decisions.length > 0) return settleDecisions(opening, seams);
  const { thread } = opening;
  const stored = thread.threadState[toolCallsKey.name] as Record<string, ToolCallRecord> | undefined;
  const tickets = stored ? openTickets(stored) : NO_TICKETS;
  const latest = thread.latestRun;
  const previous = continuedRun(latest);
  const outcome = { applied: [], ignored: [], openTickets: tickets === NO_TICKETS ? [] : tickets };
  if (tickets.length === 0 || previous !== undefined) {
    return { launch: { ...opening, decisions: NO_DECISIONS, previous }, outcome };
  }
  if (opening.input.length === 0) {
    throw new LunationError(
      'invalid-argument',
      `Thread "${opening.run.identity.threadId}" has ${tickets.length} open ticket(s); send decisions or a new message`,
      { details: { openTickets: tickets.map((ticket) => ticket.id) } },
    );
  }
  // The new input supersedes the waiting run: the loop's resume stage answers its calls and ends it.
  return { launch: { ...opening, decisions: NO_DECISIONS, superseded: latest }, outcome };
}

/** Decisions admitted against the thread's open tickets; the waiting run's loop applies the fresh ones (C0). */
function settleDecisions(opening: LoadedOpening, seams: Seams): Settlement {
  const { thread } = opening;
  const latest = thread.latestRun;
  const { fresh, ignored, open, undecided } = admitDecisions(thread.threadState, opening.decisions);
  if (fresh.length === 0) {
    // Every decision was applied before: nothing to continue.
    const outcome = { applied: [], ignored, openTickets: open };
    return { settled: settledHandle(opening.run.identity.threadId, latest, open, seams), outcome };
  }
  // The waiting run's loop applies them (its resume stage, C0), also when some tickets stay open.
  const previous = latest && latest.status !== 'done' ? latest : undefined;
  const outcome = { applied: fresh.map((decision) => decision.decisionId), ignored, openTickets: undecided };
  return { launch: { ...opening, decisions: fresh, previous }, outcome };
}

/** The run a new run on the thread continues without decisions: one whose process died, or one that waited for its background tasks. */
export function continuedRun(latest: RunRecord | undefined): RunRecord | undefined {
  if (latest?.status === 'running') return latest;
  if (latest?.status === 'waiting' && latest.termination?.type === 'awaiting-tasks') return latest;
  return undefined;
}
