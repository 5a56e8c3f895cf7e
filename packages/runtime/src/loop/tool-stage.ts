import type { CallPlan, ResultSource } from './call-plan.js';
import { toolCallsKey } from './call-records.js';
import type { Checkpointer } from './checkpointer.js';
import type { RunScope } from './run-scope.js';
import type { ToolGate } from './tool-gate.js';

/**
 * What the parts of the tool stage share (`tool-calls.ts` orchestrates, `resume.ts` restores the open step,
 * `tool-runner.ts` runs the calls): the run, its commits and its gate.
 */
export interface ToolStage {
  readonly scope: RunScope;
  readonly checkpointer: Checkpointer;
  readonly gate: ToolGate;
}

/** Emits a call's result once. */
export function reportResult(scope: RunScope, plan: CallPlan): void {
  if (plan.reported || !plan.result) return;
  plan.reported = true;
  if (!scope.listening) return;
  scope.emit({
    type: 'tool-result',
    step: scope.progress.step,
    toolCallId: plan.call.toolCallId,
    toolName: plan.call.toolName,
    status: plan.status,
    result: plan.result,
    fromLedger: plan.resultFrom === 'ledger',
  });
}

/** Tells the run's observer of a call that got its result without running. */
export function reportLedgerHit(scope: RunScope, plan: CallPlan, source: ResultSource): void {
  const { instrumentation, progress } = scope;
  if (!instrumentation) return;
  const { toolCallId, toolName } = plan.call;
  instrumentation.ledgerHit({ step: progress.step, toolCallId, toolName, source });
}

/** Tells listeners of the tickets, once they are durable. */
export function announceTickets(scope: RunScope, plans: readonly CallPlan[]): void {
  for (const plan of plans) {
    if (!plan.newlySuspended) continue;
    plan.newlySuspended = false;
    if (plan.ticket) scope.instrumentation?.toolCallSuspended(plan.ticket);
    if (scope.listening && plan.ticket) scope.emit({ type: 'tool-call-suspended', ticket: plan.ticket });
  }
}

/** Clears the open step's call records (written with the next commit), when there are any. */
export function clearCallRecords(scope: RunScope): void {
  const { state } = scope;
  if (!state.written(toolCallsKey)) return;
  for (const _ in state.peek(toolCallsKey)) {
    state.write([{ key: toolCallsKey, update: { type: 'clear' } }]);
    return;
  }
}
