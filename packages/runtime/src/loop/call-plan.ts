import {
  INTERRUPTED_CALL_ACTION,
  interruptedCallPayloadSchema,
  LunationError,
  type ResumeDecision,
  type SuspensionTicket,
  type ToolCall,
  type ToolCallStatus,
  type ToolExecution,
  type ToolResult,
} from '@lunation/contract';
import { interruptedResult, type ToolCallRecord } from './call-records.js';
import { toStorableJson } from './storable.js';

/** How a call's start reaches the ledger before it runs. */
export type LedgerMode =
  /**
   * An in-flight entry written with the commit before any tool starts: C1 for a fresh step's calls, C0 for an
   * approved call that never started (its ledger has no entry to find).
   */
  | 'claim'
  /** `beginToolExecution` right before it runs (a recovered call, or one that started before: it may be done). */
  | 'begin';

/** Where a settled call's result came from, when not from this process's own run of it. */
export type ResultSource =
  /** An earlier attempt finished it: the ledger's completed entry. */
  | 'ledger'
  /** An earlier process settled it: its call record in thread state (no events, no hooks again). */
  | 'record';

/**
 * One tool call on its way through its lifecycle in this process (see `tool-calls.ts`). Its `status` is its one
 * phase and changes only through {@link moveTo}, which refuses a move the protocol does not have; the other
 * fields are what the phase carries (ticket, decision, result, ledger entry) and this process's bookkeeping.
 */
export interface CallPlan {
  readonly call: ToolCall;
  /** The run that made the call; its ledger entries are keyed by it. */
  readonly runId: string;
  /** The call's phase, as its record stores it. Change it with {@link moveTo} or {@link settle}. */
  readonly status: ToolCallStatus;
  /** The arguments, parsed and validated (once allowed). */
  input?: unknown;
  ticket?: SuspensionTicket;
  decision?: ResumeDecision;
  result?: ToolResult;
  /** Set with `result` when it was not this process that produced it. */
  resultFrom?: ResultSource;
  ledger: LedgerMode;
  /** The ledger entry of the current attempt, once written. */
  execution?: ToolExecution;
  /** Ledger attempts already used when the tool suspended itself (so its resumed run is not a re-run). */
  attempts?: number;
  /** A ToolGate hook blocked it: the run ends `blocked` after this step. */
  blocked?: string;
  /** Bookkeeping: its record in thread state changed and must be written. */
  dirty?: boolean;
  /** Bookkeeping: it became suspended in this process (its ticket is announced once durable). */
  newlySuspended?: boolean;
  /** Bookkeeping: its result was announced. */
  reported?: boolean;
}

/**
 * The moves of a call's phase (the durability protocol's call lifecycle): a settled call (`succeeded`,
 * `failed`, `denied`, `cancelled`, `abandoned`) never moves again.
 */
const MOVES: Readonly<Record<ToolCallStatus, readonly ToolCallStatus[]>> = {
  new: ['allowed', 'succeeded', 'failed', 'denied', 'cancelled'],
  allowed: ['suspended', 'running', 'succeeded', 'failed', 'denied', 'cancelled'],
  suspended: ['resuming', 'succeeded', 'failed', 'denied', 'cancelled'],
  resuming: ['suspended', 'running', 'succeeded', 'failed', 'cancelled'],
  running: ['suspended', 'succeeded', 'failed', 'cancelled', 'abandoned'],
  succeeded: [],
  failed: [],
  denied: [],
  cancelled: [],
  abandoned: [],
};

/** A move of a call's phase the protocol does not have: a defect in the runtime, never the user's input. */
export class IllegalCallMoveError extends LunationError {
  constructor(plan: CallPlan, to: ToolCallStatus) {
    super(
      'internal',
      `Tool call "${plan.call.toolCallId}" (${plan.call.toolName}) cannot move from "${plan.status}" to "${to}"`,
      { details: { toolCallId: plan.call.toolCallId, from: plan.status, to } },
    );
    this.name = 'IllegalCallMoveError';
  }
}

/** Moves a call to its next phase; throws {@link IllegalCallMoveError} on a move the protocol does not have. */
export function moveTo(plan: CallPlan, to: ToolCallStatus): void {
  if (!MOVES[plan.status].includes(to)) throw new IllegalCallMoveError(plan, to);
  (plan as { status: ToolCallStatus }).status = to;
}

/** A call of a fresh step: `new`, its start to be claimed with C1. */
export function newPlan(call: ToolCall, runId: string): CallPlan {
  return { call, runId, status: 'new', ledger: 'claim' };
}

/** A call of the open step as its record left it (a restore, not a move). */
export function restoredPlan(call: ToolCall, runId: string, status: ToolCallStatus): CallPlan {
  return { call, runId, status, ledger: 'begin' };
}

/**
 * A suspended call decided: moved to the phase its decided record has ({@link decideRecord}: declined, answered
 * by the payload, or `resuming`), with the decision, and its result when the decision settles it. A call to run
 * is claimed in C0 when it never started (a gate suspended it); one that started before (it suspended itself,
 * or was cut off) begins again in the ledger, which knows its attempts.
 */
export function decideCall(plan: CallPlan, decision: ResumeDecision): void {
  const decided = decideRecord(toRecord(plan), decision);
  moveTo(plan, decided.status);
  plan.decision = decision;
  if (decided.result) plan.result = decided.result;
  else plan.ledger = startedBefore(plan) ? 'begin' : 'claim';
  plan.dirty = true;
}

/** Whether a suspended call ran before it suspended: it has ledger attempts, or was cut off mid-run. */
function startedBefore(plan: CallPlan): boolean {
  return plan.attempts !== undefined || plan.ticket?.action === INTERRUPTED_CALL_ACTION;
}

/**
 * A suspended call's record once a decision arrives: declined (`cancelled`, with a result saying so), answered
 * by the decision's payload (`use-decision-as-result`), or `resuming` with the decision, to run.
 */
export function decideRecord(record: ToolCallRecord, decision: ResumeDecision): ToolCallRecord {
  if (record.ticket?.action === INTERRUPTED_CALL_ACTION) return decideInterrupted(record, decision);
  if (decision.action === 'cancel') {
    return {
      ...record,
      status: 'cancelled',
      decision,
      result: {
        status: 'error',
        message: `The user declined this call${decision.reason ? `: ${decision.reason}` : '.'}`,
        metadata: { declined: true },
      },
    };
  }
  if (record.ticket?.resumeMode === 'use-decision-as-result') {
    const payload = toStorableJson(decision.payload);
    return {
      ...record,
      status: payload.ok ? 'succeeded' : 'failed',
      decision,
      result: payload.ok
        ? { status: 'success', ...(payload.value === undefined ? {} : { data: payload.value }) }
        : { status: 'error', message: `The client's result cannot be stored: ${payload.problem}.` },
    };
  }
  return { ...record, status: 'resuming', decision };
}

/**
 * An `interrupted-call` ticket decided: `rerun` makes the call `resuming` (it runs again, `rerun: true`),
 * `done` settles it with the person's result, `fail` (or a `cancel` decision) with an error result.
 */
function decideInterrupted(record: ToolCallRecord, decision: ResumeDecision): ToolCallRecord {
  const parsed = interruptedCallPayloadSchema.safeParse(decision.payload);
  const payload = decision.action === 'cancel' || !parsed.success ? undefined : parsed.data;
  if (payload?.choice === 'rerun') return { ...record, status: 'resuming', decision };
  if (payload?.choice === 'done') {
    const data = toStorableJson(payload.result);
    return {
      ...record,
      status: 'succeeded',
      decision,
      result: {
        status: 'success',
        ...(data.ok && data.value !== undefined ? { data: data.value } : {}),
        ...(payload.message === undefined ? {} : { message: payload.message }),
        metadata: { interrupted: true, resolvedBy: 'person' },
      },
    };
  }
  const why = payload?.message ?? decision.reason;
  return {
    ...record,
    status: 'failed',
    decision,
    result: interruptedResult(why === undefined ? 'A person chose not to run it again.' : why),
  };
}

/** Settles a call with a result: it will not run. */
export function settle(plan: CallPlan, status: ToolCallStatus, result: ToolResult): void {
  moveTo(plan, status);
  plan.result = result;
  plan.dirty = true;
}

/** Whether a call is settled: it has its result. */
export function isSettled(plan: CallPlan): boolean {
  return plan.result !== undefined;
}

/** Whether a call is to run now. */
export function isRunnable(plan: CallPlan): boolean {
  return plan.result === undefined && (plan.status === 'allowed' || plan.status === 'resuming');
}

/** The record kept in thread state for a call of the open step. */
export function toRecord(plan: CallPlan): ToolCallRecord {
  const { call } = plan;
  return {
    toolCallId: call.toolCallId,
    toolName: call.toolName,
    runId: plan.runId,
    status: plan.status,
    ...(plan.ticket ? { ticket: plan.ticket } : {}),
    ...(plan.decision ? { decision: plan.decision } : {}),
    ...(plan.result ? { result: plan.result } : {}),
    ...(plan.attempts === undefined ? {} : { attempts: plan.attempts }),
  };
}

/** An error result telling the model why a call did not run. */
export function errorResult(message: string, metadata?: ToolResult['metadata']): ToolResult {
  return { status: 'error', message, ...(metadata ? { metadata } : {}) };
}

/** The result of a call that did not run: the run ended or was stopped first. */
export function cancelledResult(why: string): ToolResult {
  return errorResult(`Cancelled: ${why}.`, { cancelled: true });
}

/** The result of a call whose ticket was left undecided: the user sent a new message instead. */
export function supersededResult(ticket: SuspensionTicket): ToolResult {
  return errorResult(`Cancelled: the user sent a new message instead of answering "${ticket.message}".`, {
    superseded: true,
  });
}
