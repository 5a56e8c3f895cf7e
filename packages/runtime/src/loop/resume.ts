import type { ResumeDecision, RunRecord, SuspensionTicket, ToolCall, ToolMessage } from '@lunation/contract';
import {
  type CallPlan,
  cancelledResult,
  decideCall,
  moveTo,
  newPlan,
  restoredPlan,
  settle,
  supersededResult,
} from './call-plan.js';
import { answerOpenStep, type ToolCallRecord, toolCallsKey } from './call-records.js';
import type { Checkpointer } from './checkpointer.js';
import { handleInterrupted, interruptPolicy } from './interrupted-calls.js';
import type { RunScope } from './run-scope.js';
import { clearCallRecords, reportLedgerHit, type ToolStage } from './tool-stage.js';

/**
 * The resume stage: the open step's calls restored from what the store says (the recovery table in
 * `tool-calls.ts`), the decisions applied, decided and interrupted calls settled — or, when new input came
 * instead of decisions, the waiting run superseded. `ToolCalls.resume` commits and runs what this restores.
 */

/** The open step's calls as restored, and the ids of the decisions applied to them. */
export interface RestoredStep {
  plans: CallPlan[];
  applied: string[];
}

/** The unanswered calls of the open step as the store left them, with this run's decisions applied. */
export async function restoreStep(stage: ToolStage, calls: readonly ToolCall[]): Promise<RestoredStep> {
  const applied: string[] = [];
  const plans: CallPlan[] = [];
  const records = stage.scope.state.peek(toolCallsKey);
  for (const call of calls) {
    const record = records[call.toolCallId];
    plans.push(record ? await restoreRecorded(stage, call, record, applied) : await recover(stage, call));
  }
  return { plans, applied };
}

/** A call restored still waiting for its ticket's decision (not one suspended in this process). */
export function isAwaitingDecision(plan: CallPlan): boolean {
  return plan.status === 'suspended' && !plan.newlySuspended && plan.result === undefined;
}

/** A call with a record: its recorded result, or its phase, with a decision for its ticket applied. */
async function restoreRecorded(
  stage: ToolStage,
  call: ToolCall,
  record: ToolCallRecord,
  applied: string[],
): Promise<CallPlan> {
  // The record's phase, except that a call recorded allowed or running begins again (the ledger tells).
  const waiting = record.status === 'suspended' && record.ticket !== undefined;
  const status =
    record.result || waiting || record.status === 'resuming' ? record.status : ('allowed' as const);
  const plan = restoredPlan(call, record.runId, status);
  if (record.ticket) plan.ticket = record.ticket;
  if (record.decision) plan.decision = record.decision;
  if (record.attempts !== undefined) plan.attempts = record.attempts;
  if (record.result) {
    plan.result = record.result;
    plan.resultFrom = 'record';
    reportLedgerHit(stage.scope, plan, 'record');
  } else if (waiting && plan.ticket) {
    await decideWaiting(stage, plan, plan.ticket, applied);
  }
  return plan;
}

/** A waiting call: its decision applied, or superseded by new input; without either it stays waiting. */
async function decideWaiting(
  stage: ToolStage,
  plan: CallPlan,
  ticket: SuspensionTicket,
  applied: string[],
): Promise<void> {
  const { scope } = stage;
  const { decisions, input } = scope.options;
  const decision = decisions.find((candidate) => candidate.ticketId === ticket.id);
  if (decision) {
    applyDecision(scope, plan, decision);
    applied.push(decision.decisionId);
    // Settled by the decision after an attempt started (it asked, or was cut off): C0 completes its entry.
    if (plan.result && plan.attempts !== undefined && scope.durable) {
      await completeDecided(stage.checkpointer, plan);
    }
  } else if (input.length > 0) {
    settle(plan, 'cancelled', supersededResult(ticket));
  }
}

/** A decision for a suspended call: decline it, take the payload as its result, or let it run. */
function applyDecision(scope: RunScope, plan: CallPlan, decision: ResumeDecision): void {
  scope.instrumentation?.toolCallResumed(plan.call.toolCallId, decision);
  if (scope.listening) scope.emit({ type: 'tool-call-resumed', toolCallId: plan.call.toolCallId, decision });
  decideCall(plan, decision);
}

/** Rides the completion of a decided call's in-flight ledger entry in C0, with the record of its outcome. */
async function completeDecided(checkpointer: Checkpointer, plan: CallPlan): Promise<void> {
  const entry = await checkpointer.lookup(plan.runId, plan.call);
  if (entry?.status === 'in-flight' && plan.result) {
    checkpointer.ride(checkpointer.completion(entry, plan.result));
  }
}

/**
 * A call without a record: cancelled when its run is not `running` (nothing runs behind the user's back),
 * otherwise what the ledger says — its result, its interrupt policy, or (no entry) the gate again.
 */
async function recover(stage: ToolStage, call: ToolCall): Promise<CallPlan> {
  const { scope, checkpointer } = stage;
  const { previous } = scope.options;
  const plan = newPlan(call, previous?.identity.runId ?? scope.identity.runId);
  if (previous?.status !== 'running' || !scope.durable) {
    settle(plan, 'cancelled', cancelledResult('the run ended before this call finished'));
    return plan;
  }
  // The process running this step died: the ledger tells what became of the call.
  const entry = await checkpointer.lookup(plan.runId, call);
  if (entry?.status === 'completed' && entry.result) {
    moveTo(plan, entry.result.status === 'error' ? 'failed' : 'succeeded');
    plan.result = entry.result;
    plan.resultFrom = 'ledger';
    reportLedgerHit(scope, plan, 'ledger');
  } else if (entry) {
    moveTo(plan, 'allowed');
    plan.ledger = 'begin';
    handleInterrupted(stage, plan, entry, interruptPolicy(scope, call));
  }
  return plan;
}

/**
 * New input replaces a waiting run: each open call is answered (a recorded result, declined as superseded, or
 * cancelled before it could run), the records cleared and that run ended `cancelled` — C0, before the input.
 */
export async function supersede(stage: ToolStage, superseded: RunRecord): Promise<void> {
  const { scope } = stage;
  const parts = answerOpenStep(scope.messages, scope.state.peek(toolCallsKey), (record) =>
    record?.status === 'suspended' && record.ticket
      ? supersededResult(record.ticket)
      : cancelledResult('the user sent a new message before this call could run'),
  );
  const message: ToolMessage = {
    id: scope.ids.id(),
    role: 'tool',
    content: parts,
    metadata: { runId: superseded.identity.runId, step: superseded.steps, superseded: true },
  };
  scope.append(message);
  clearCallRecords(scope);
  await stage.checkpointer.commitSupersede(superseded);
}
