import type {
  ResumeDecision,
  SuspensionTicket,
  ToolCall,
  ToolCallStatus,
  ToolExecution,
  ToolResult,
} from '@lunation/contract';
import type { ToolCallRecord } from './call-records.js';

/** How a call's start reaches the ledger before it runs. */
export type LedgerMode =
  /** An in-flight entry written with the step's first checkpoint (C1), before any tool of the step starts. */
  | 'claim'
  /** `beginToolExecution` right before it runs (a resumed or recovered call; it may find the call done). */
  | 'begin';

/** One tool call on its way through its lifecycle in this process (see `tool-calls.ts`). */
export interface CallPlan {
  readonly call: ToolCall;
  /** The run that made the call; its ledger entries are keyed by it. */
  readonly runId: string;
  status: ToolCallStatus;
  /** The arguments, parsed and validated (once allowed). */
  input?: unknown;
  ticket?: SuspensionTicket;
  decision?: ResumeDecision;
  result?: ToolResult;
  ledger: LedgerMode;
  /** The ledger entry of the current attempt, once written. */
  execution?: ToolExecution;
  /** The result came from the ledger: an earlier attempt finished it. */
  fromLedger?: boolean;
  /** Its result is already known to the thread (a record of an earlier process): no events, no hooks. */
  fromRecord?: boolean;
  /** A ToolGate hook blocked it: the run ends `blocked` after this step. */
  blocked?: string;
  /** Its record in thread state changed and must be written. */
  dirty?: boolean;
  /** It became suspended in this process (its ticket is announced once durable). */
  newlySuspended?: boolean;
  /** Its result was announced. */
  reported?: boolean;
  /** Ledger attempts already used when the tool suspended itself (so its resumed run is not a re-run). */
  attempts?: number;
}

export function newPlan(call: ToolCall, runId: string): CallPlan {
  return { call, runId, status: 'new', ledger: 'claim' };
}

/** Settles a call with a result: it will not run. */
export function settle(plan: CallPlan, status: ToolCallStatus, result: ToolResult): void {
  plan.status = status;
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
