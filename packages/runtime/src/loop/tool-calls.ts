import type { ToolCall, ToolMessage, ToolResultPart } from '@lunation/contract';
import type { ModelResponse } from '../plugin.js';
import { appliedDecisionsKey } from '../runtime-keys.js';
import type { StateUpdate } from '../state.js';
import {
  type CallPlan,
  cancelledResult,
  errorResult,
  isRunnable,
  isSettled,
  newPlan,
  settle,
  toRecord,
} from './call-plan.js';
import { answerOpenStep, hasUnansweredCall, toolCallsKey, unansweredCalls } from './call-records.js';
import type { Checkpointer } from './checkpointer.js';
import { isAwaitingDecision, restoreStep, supersede } from './resume.js';
import type { RunScope } from './run-scope.js';
import { ToolGate } from './tool-gate.js';
import { ToolRunner } from './tool-runner.js';
import { announceTickets, clearCallRecords, reportResult, type ToolStage } from './tool-stage.js';

/** How the tool calls of a step ended. */
export interface ToolStepOutcome {
  /** A ToolGate hook blocked a call: the run ends `blocked`. */
  blocked?: string;
  /** A call waits for a decision: the run ends `waiting`. */
  suspended: boolean;
}

/**
 * The tool-call protocol. A crash at any instant must never skip an approval, repeat a finished side effect
 * or strand a run, so every decision that guards a side effect is durable before the side effect can start,
 * and every finished side effect is durable before the next one starts and before the next model call:
 *
 * - **C1** (`Checkpointer.commitGateOutcomes`), one commit before any tool of the step starts: the assistant
 *   message, each call's gate outcome (a suspended call with its ticket, a denied or failed one with its
 *   result, as call records in thread state) and an in-flight ledger entry for each call about to start.
 * - Each allowed call runs (`tool-runner.ts`: begin → invoke → settle); when it finishes, its ledger
 *   completion is written before the next call starts (sequential) or as it finishes (parallel). The last one
 *   rides in C2.
 * - **C2** (`Checkpointer.commitStepEnd`, from `AgentLoop.step` or `resume` below), the step's checkpoint:
 *   the tool message with every result in call order, the call records cleared. While a call waits for a
 *   decision no tool message is written: the finished calls' results are kept as call records beside the
 *   tickets, and the run record says `waiting` with exactly those tickets.
 *
 * A resume (`resume.ts` restores the open step) starts with **C0** (`Checkpointer.commitDecisions`): the
 * decisions consumed (a suspended call becomes `resuming` with its decision, or settles as declined or
 * answered; an approved call that never started gets its in-flight ledger entry, as with C1), and the run
 * record back to `running` once no ticket is open. Decisions reach the loop checked (`decisions.ts`); the
 * resume stage is the only place that applies them and emits `tool-call-resumed`. New input instead of
 * decisions supersedes the waiting run: its C0 (`Checkpointer.commitSupersede`) answers the open calls and
 * ends that run `cancelled` before the input joins. A recovered call, or a resumed one that ran before it
 * suspended, records its start with `beginToolExecution`, which hands back the recorded result instead when
 * an earlier attempt finished it. Recovery decides from the store alone, per unanswered call (`restoreStep`,
 * then `resume`; each row has its test in `test/loop/recovery-table.test.ts`):
 *
 * | call record / ledger                          | what happens                                                  |
 * | --------------------------------------------- | ------------------------------------------------------------- |
 * | record with a result                          | the recorded result; never executed, the ledger not asked     |
 * | `suspended`, its decision arrives             | C0: `resuming` with it (claimed in C0 unless it ran before;   |
 * |                                               | runs after C0), or settled (declined)                         |
 * | `suspended`, decisions for other tickets only | stays; C0 records those; nothing of the step runs; `waiting`  |
 * | `suspended`, no decision, no input            | stays; the run ends `waiting` with its ticket                 |
 * | `suspended`, new input instead                | superseded: answered, the waiting run ends `cancelled` (C0)   |
 * | `resuming` or `allowed` (record, no result)   | begins (after its interrupt policy, when the ledger says cut  |
 * |                                               | off): the ledger's result if an attempt finished, else runs   |
 * | no record, the run is not `running`           | cancelled: nothing runs behind the user's back                |
 * | no record, ledger `completed`                 | the ledger's result; never executed                           |
 * | no record, ledger `in-flight`                 | its interrupt policy (below)                                  |
 * | no record, no ledger entry                    | goes through ToolGate again; never executed unchecked         |
 *
 * A call is **interrupted** when its ledger entry is `in-flight` with more attempts than its record says were
 * used (none without a record): an earlier process started it and died before its completion. Its interrupt
 * policy (`interrupted-calls.ts`: the plugins' most careful answer, else the tool's, else the agent's,
 * else `rerun`) decides, for a call without a record as it is restored and for a `resuming` or `allowed` one
 * before it would begin again:
 *
 * | interrupt policy | what happens                                                                        |
 * | ---------------- | ----------------------------------------------------------------------------------- |
 * | `rerun`          | `begin` again: runs with the same idempotency key, `rerun: true`                    |
 * | `fail`           | settled with an error result (interrupted, may or may not have taken effect); the   |
 * |                  | ledger entry is completed with it; never runs again                                 |
 * | `ask`            | `suspended` with an `interrupted-call` ticket (its record keeps the attempts used); |
 * |                  | decided `rerun` → `resuming`, runs with `rerun: true`; `done` or `fail` → settled,  |
 * |                  | its ledger entry completed with that result in the same commit (C0)                 |
 *
 * The policy is read only when the ledger says the call was interrupted; calls of the `rerun` policy cost no
 * extra read (their `begin` tells).
 */
export class ToolCalls implements ToolStage {
  readonly gate: ToolGate;
  /** Made when the first call runs. */
  private runner: ToolRunner | undefined;
  /** The calls of the step in progress (until its tool message or records are written). */
  private plans: readonly CallPlan[] = NO_PLANS;

  /** The tool stage's parts (`ToolStage`) are this object's own: no separate object per run. */
  constructor(
    readonly scope: RunScope,
    readonly checkpointer: Checkpointer,
  ) {
    this.gate = new ToolGate(scope);
  }

  /** The calls of a fresh step: gate, C1, run, then the results for C2. */
  async step(response: ModelResponse, rejectedCalls?: ReadonlyMap<string, string>): Promise<ToolStepOutcome> {
    const { scope } = this;
    const plans = this.plansOf(response.toolCalls, rejectedCalls);
    const blocked = this.gate.hasGates ? await this.decide(plans, response) : this.validate(plans);
    this.recordOutcomes(plans, undefined);
    if (scope.durable) await this.commitOutcomes(plans, 'C1');
    announceTickets(scope, plans);
    const running = this.running.run(plans, response);
    if (running) await running;
    return this.close(plans, blocked);
  }

  /** Whether the thread has an open step: calls of its last assistant message that no tool message answers. */
  hasOpenStep(): boolean {
    return hasUnansweredCall(this.scope.messages);
  }

  /**
   * The unanswered calls of the thread's open step, continued from what the store says: decisions applied
   * (C0), recovered calls settled, re-run or gated again, then the results committed before the next model
   * call. Undefined when the thread has no unanswered call.
   */
  async resume(): Promise<ToolStepOutcome | undefined> {
    const { scope } = this;
    const calls = unansweredCalls(scope.messages);
    if (calls.length === 0) return undefined;
    const { superseded } = scope.options;
    if (superseded !== undefined) {
      await supersede(this, superseded);
      return undefined;
    }
    const { plans, applied } = await restoreStep(this, calls);
    this.plans = plans;
    if (scope.options.decisions.length > 0 && plans.some(isAwaitingDecision)) {
      // Decisions for some tickets only: C0 records them, and nothing runs until every ticket is decided. The
      // calls they settled (declined, answered) are told now: later their results come from records, untold.
      this.recordOutcomes(plans, applied);
      if (scope.durable) await this.checkpointer.commitDecisions('waiting');
      for (const plan of plans) if (plan.resultFrom !== 'record') reportResult(scope, plan);
      return this.close(plans, undefined);
    }
    const blocked = await this.decide(plans, undefined);
    this.recordOutcomes(plans, applied);
    if (scope.durable) await this.commitOutcomes(plans, 'C0');
    announceTickets(scope, plans);
    const running = this.running.run(plans, undefined);
    if (running) await running;
    const outcome = this.close(plans, blocked);
    // A resumed call's completion must be durable before the next model call.
    if (scope.durable && !outcome.suspended && outcome.blocked === undefined) {
      await this.checkpointer.commitStepEnd();
    }
    return outcome;
  }

  /**
   * Answers every unanswered call of the open step when the run ends cancelled or failed: with its result
   * when it has one (in this process, in a record), otherwise as cancelled, so no later run executes it.
   */
  answerOpenCalls(why: string): void {
    const { scope } = this;
    if (!this.hasOpenStep()) return;
    const records = scope.state.peek(toolCallsKey);
    const parts = answerOpenStep(scope.messages, records, () => cancelledResult(why));
    const current = new Map(this.plans.map((plan) => [plan.call.toolCallId, plan]));
    for (const part of parts) {
      const plan = current.get(part.toolCallId);
      if (plan?.result) {
        part.result = plan.result;
        if (plan.resultFrom !== 'record') reportResult(scope, plan);
      } else if (scope.listening && records[part.toolCallId]?.result === undefined) {
        // Answered only now (it never started, or waited for a decision): the run's events say so too.
        scope.emit({
          type: 'tool-result',
          step: scope.progress.step,
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          status: 'cancelled',
          result: part.result,
          fromLedger: false,
        });
      }
    }
    this.appendToolMessage(parts);
    clearCallRecords(scope);
  }

  /** The run was cancelled: running calls are told, and abandoned if they do not stop. */
  cancel(): void {
    this.runner?.cancel();
  }

  dispose(): void {
    this.runner?.dispose();
  }

  private get running(): ToolRunner {
    if (this.runner === undefined) this.runner = new ToolRunner(this);
    return this.runner;
  }

  /** The plans of a fresh step's calls; a call the provider gave no usable id fails at once. */
  private plansOf(calls: readonly ToolCall[], rejectedCalls?: ReadonlyMap<string, string>): CallPlan[] {
    const { runId } = this.scope.identity;
    const plans = new Array<CallPlan>(calls.length);
    for (let index = 0; index < calls.length; index++) {
      const call = calls[index] as ToolCall;
      const plan = newPlan(call, runId);
      const problem = rejectedCalls?.get(call.toolCallId);
      if (problem !== undefined) settle(plan, 'failed', errorResult(problem));
      plans[index] = plan;
    }
    this.plans = plans;
    return plans;
  }

  /** Gate outcomes for the calls that have none yet. A blocked call stops the whole step: nothing else runs. */
  private async decide(plans: CallPlan[], response: ModelResponse | undefined): Promise<string | undefined> {
    let blocked: string | undefined;
    for (const plan of plans) {
      if (plan.status !== 'new') continue;
      await this.gate.decide(plan, response);
      if (plan.blocked !== undefined && blocked === undefined) blocked = plan.blocked;
    }
    if (blocked !== undefined) interrupt(plans);
    return blocked;
  }

  /** `decide` for an agent without ToolGate hooks: validation alone, nothing to await, nothing blocks. */
  private validate(plans: CallPlan[]): undefined {
    for (const plan of plans) if (plan.status === 'new') this.gate.validate(plan);
    return undefined;
  }

  /** The gate outcomes and decisions as call records in thread state. */
  private recordOutcomes(plans: CallPlan[], appliedDecisions: string[] | undefined): void {
    let records: ReturnType<typeof toRecord>[] | undefined;
    for (const plan of plans) {
      if (!plan.dirty) continue;
      if (records === undefined) records = [];
      records.push(toRecord(plan));
      plan.dirty = false;
    }
    const applied = appliedDecisions !== undefined && appliedDecisions.length > 0;
    if (records === undefined && !applied) return;
    const updates: StateUpdate[] = [];
    if (records) updates.push({ key: toolCallsKey, update: { type: 'set', records } });
    if (applied) updates.push({ key: appliedDecisionsKey, update: appliedDecisions });
    this.scope.state.write(updates);
  }

  /**
   * C1 (a fresh step) or C0 (a resume): the call records, an in-flight ledger entry for each call that starts
   * now (claimed by the checkpointer) and whatever the step added (the assistant message) — one commit, before
   * any tool starts.
   */
  private commitOutcomes(plans: CallPlan[], stage: 'C0' | 'C1'): Promise<void> {
    const starting = plans.filter((plan) => isRunnable(plan) && plan.ledger === 'claim');
    return this.checkpointer.commitOutcomes(starting, stage);
  }

  /** The step's results: a tool message in call order, or — while a call waits — call records. */
  private close(plans: CallPlan[], blocked: string | undefined): ToolStepOutcome {
    const { scope } = this;
    this.plans = NO_PLANS;
    const outcome: ToolStepOutcome = { suspended: false };
    if (blocked !== undefined) outcome.blocked = blocked;
    if (anySuspended(plans)) {
      const records = [];
      for (const plan of plans) {
        if (plan.dirty || (isSettled(plan) && plan.resultFrom !== 'record')) records.push(toRecord(plan));
        plan.dirty = false;
      }
      if (records.length > 0) scope.state.write([{ key: toolCallsKey, update: { type: 'set', records } }]);
      outcome.suspended = true;
      return outcome;
    }
    const parts = new Array<ToolResultPart>(plans.length);
    for (let index = 0; index < plans.length; index++) {
      const plan = plans[index] as CallPlan;
      parts[index] = {
        type: 'tool-result',
        toolCallId: plan.call.toolCallId,
        toolName: plan.call.toolName,
        result: plan.result ?? cancelledResult('the call did not finish'),
      };
    }
    this.appendToolMessage(parts);
    clearCallRecords(scope);
    return outcome;
  }

  private appendToolMessage(parts: ToolResultPart[]): void {
    if (parts.length === 0) return;
    const message: ToolMessage = {
      id: this.scope.ids.id(),
      role: 'tool',
      content: parts,
      metadata: { runId: this.scope.identity.runId, step: this.scope.progress.step },
    };
    this.scope.append(message);
  }
}

const NO_PLANS: readonly CallPlan[] = Object.freeze([]);

function anySuspended(plans: readonly CallPlan[]): boolean {
  for (const plan of plans) if (plan.status === 'suspended') return true;
  return false;
}

/** A blocked call stops its step: every other call not settled yet gets an error result and does not run. */
function interrupt(plans: CallPlan[]): void {
  for (const plan of plans) {
    if (isSettled(plan)) continue;
    settle(
      plan,
      'failed',
      errorResult('Tool execution was interrupted: an earlier call in this step was blocked.'),
    );
  }
}
