import type { SuspensionTicket, TerminationReason } from '@lunation/contract';

/** A run the user submitted. */
export interface SubmittedRun {
  runId: string;
  threadId: string;
  /** The tools its model calls, in its first step. */
  plan: readonly string[];
  /** Virtual ms when its first send began, and when a send of it first resolved. */
  sentAt: number;
  acceptedAt?: number;
}

/** What the user meant to answer a ticket with: every send for that ticket carries this decision. */
export interface DecisionIntent {
  ticket: SuspensionTicket;
  decisionId: string;
  /** `resume` approves (or, for an interrupted call, answers with `choice`); `cancel` denies. */
  action: 'resume' | 'cancel';
  /** For an interrupted-call ticket: what the person chose. */
  choice?: 'rerun' | 'done' | 'fail';
  /** Virtual ms when the first send of it began. */
  firstSentAt: number;
}

/** A cancel the user asked for, naming its run. */
export interface CancelAttempt {
  runId: string;
  threadId: string;
  startedAt: number;
  /** Set when `cancel()` resolved. */
  outcome?: { cancelled: boolean; termination?: TerminationReason; at: number };
}

/**
 * What the simulated user did, as the world saw it (outside every simulated part): the runs it submitted, the
 * decisions it meant and sent, the cancels and deletes it asked for. The invariants judge the store, the event
 * logs and the tools' effects against it.
 */
export class UserJournal {
  readonly runs = new Map<string, SubmittedRun>();
  /** Decision intents by ticket id. */
  readonly intents = new Map<string, DecisionIntent>();
  readonly cancels: CancelAttempt[] = [];
  /** Deleted threads: when the delete applied, and the runs it took. */
  readonly deletes = new Map<string, { at: number; runIds: readonly string[] }>();
  /** Runs closed to decisions from some instant on (cancelled, superseded by new input, deleted): the earliest. */
  private readonly closed = new Map<string, number>();

  /** Runs of `threadId`, in submission order. */
  runsOf(threadId: string): SubmittedRun[] {
    return [...this.runs.values()].filter((run) => run.threadId === threadId);
  }

  /** Marks `runId` closed to decisions from `at` on (when not closed earlier). */
  close(runId: string, at: number): void {
    const earlier = this.closed.get(runId);
    if (earlier === undefined || at < earlier) this.closed.set(runId, at);
  }

  /** Since when `runId` takes no decision, or undefined. */
  closedAt(runId: string): number | undefined {
    return this.closed.get(runId);
  }

  /** The intent for the ticket of the call `callIds` (provider id or the runtime's) of `runId`. */
  intentFor(runId: string, callIds: readonly string[]): DecisionIntent | undefined {
    for (const intent of this.intents.values()) {
      if (intent.ticket.runId === runId && callIds.includes(intent.ticket.toolCallId)) return intent;
    }
    return undefined;
  }

  /** True when the thread of `runId` was deleted by `at` (or at all, without `at`). */
  deleted(runId: string, at = Number.POSITIVE_INFINITY): boolean {
    const run = this.runs.get(runId);
    const deleted = run === undefined ? undefined : this.deletes.get(run.threadId);
    return deleted !== undefined && deleted.at <= at && deleted.runIds.includes(runId);
  }
}
