import {
  INTERRUPTED_CALL_ACTION,
  type InterruptPolicy,
  type JsonSchema,
  type ResumeDecision,
  type RunRecord,
  type ToolCall,
  type ToolExecution,
  type ToolMessage,
  type ToolResultPart,
  toolCallIdentity,
} from '@lunation/contract';
import { DEFAULT_TOOL_CANCEL_GRACE_MS, DEFAULT_TOOL_TIMEOUT_MS, type ToolErrorPolicy } from '../agent.js';
import { createId } from '../id.js';
import type { ModelResponse } from '../plugin.js';
import { appliedDecisionsKey } from '../runtime-keys.js';
import type { StateUpdate } from '../state.js';
import {
  type CallPlan,
  cancelledResult,
  decideCall,
  errorResult,
  isRunnable,
  isSettled,
  moveTo,
  newPlan,
  restoredPlan,
  settle,
  supersededResult,
  toRecord,
} from './call-plan.js';
import { answerOpenStep, interruptedResult, toolCallsKey, unansweredCalls } from './call-records.js';
import { type Checkpointer, idempotencyKey } from './checkpointer.js';
import type { RunScope } from './run-scope.js';
import { parseArguments } from './storable.js';
import { ToolClock } from './tool-clock.js';
import { ToolGate } from './tool-gate.js';
import { invokeTool, ToolCallContext } from './tool-invoker.js';

/** How the tool calls of a step ended. */
export interface ToolStepOutcome {
  /** A ToolGate hook blocked a call: the run ends `blocked`. */
  blocked?: string;
  /** A call waits for a decision: the run ends `waiting`. */
  suspended: boolean;
}

/**
 * The tool-call protocol. A crash at any instant must never skip an approval, repeat a finished side effect or
 * strand a run, so every decision that guards a side effect is durable before the side effect can start, and
 * every finished side effect is durable before the next one starts and before the next model call:
 *
 * - **C1** (`Checkpointer.commitGateOutcomes`), one commit before any tool of the step starts: the assistant message, each call's gate outcome
 *   (a suspended call with its ticket, a denied or failed one with its result, as call records in thread
 *   state) and an in-flight ledger entry for each call about to start.
 * - Each allowed call runs; when it finishes, its ledger completion is written before the next call starts
 *   (sequential) or as it finishes (parallel). The last one rides in C2.
 * - **C2** (`Checkpointer.commitStepEnd`: `AgentLoop.step`, or `resume` below), the step's checkpoint: the tool message with every result in call order, the call records cleared.
 *   While a call waits for a decision no tool message is written: the finished calls' results are kept as
 *   call records beside the tickets, and the run record says `waiting` with exactly those tickets.
 *
 * A resume starts with **C0** (`Checkpointer.commitDecisions`): the decisions consumed (a suspended call becomes
 * `resuming` with its decision, or settles as declined or answered; an approved call that never started gets
 * its in-flight ledger entry, as with C1), and the run record back to `running` once no ticket is open. Decisions reach the loop checked (`decisions.ts`); this stage is the only place that applies
 * them and emits `tool-call-resumed`. New input instead of decisions supersedes the waiting run: its C0
 * (`Checkpointer.commitSupersede`) answers the open calls and ends that run `cancelled` before the input joins.
 * A recovered call, or a resumed one that ran before it suspended, records its start with `beginToolExecution`,
 * which hands back the recorded result instead when an earlier attempt finished it. Recovery decides from the store alone, per unanswered call
 * (`restore`, then `resume`; each row has its test in `test/loop/recovery-table.test.ts`):
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
 * policy (the plugins' most careful answer, else the tool's, else the agent's, else `rerun`) decides, for a
 * call without a record as it is restored and for a `resuming` or `allowed` one before it would begin again:
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
export class ToolCalls {
  private readonly gate: ToolGate;
  /** Made when the first call runs. */
  private clock: ToolClock | undefined;
  /** The calls of the step in progress (until its tool message or records are written). */
  private plans: readonly CallPlan[] = NO_PLANS;

  constructor(
    private readonly scope: RunScope,
    private readonly checkpointer: Checkpointer,
  ) {
    this.gate = new ToolGate(scope);
  }

  /** The calls of a fresh step: gate, C1, run, then the results for C2. */
  async step(response: ModelResponse, rejectedCalls?: ReadonlyMap<string, string>): Promise<ToolStepOutcome> {
    const { runId } = this.scope.identity;
    const calls = response.toolCalls;
    const plans = new Array<CallPlan>(calls.length);
    for (let index = 0; index < calls.length; index++) {
      const call = calls[index] as ToolCall;
      const plan = newPlan(call, runId);
      const problem = rejectedCalls?.get(call.toolCallId);
      if (problem !== undefined) settle(plan, 'failed', errorResult(problem));
      plans[index] = plan;
    }
    this.plans = plans;
    const blocked = this.gate.hasGates ? await this.decide(plans, response) : this.validate(plans);
    this.recordOutcomes(plans, undefined);
    if (this.scope.durable) await this.commitOutcomes(plans, false);
    this.announce(plans);
    const running = this.run(plans, response);
    if (running) await running;
    return this.close(plans, blocked);
  }

  /** Whether the thread has an open step: calls of its last assistant message that no tool message answers. */
  hasOpenStep(): boolean {
    return unansweredCalls(this.scope.messages).length > 0;
  }

  /**
   * The unanswered calls of the thread's open step, continued from what the store says: decisions applied
   * (C0), recovered calls settled, re-run or gated again, then the results committed before the next model
   * call. Undefined when the thread has no unanswered call.
   */
  async resume(): Promise<ToolStepOutcome | undefined> {
    const calls = unansweredCalls(this.scope.messages);
    if (calls.length === 0) return undefined;
    const { superseded } = this.scope.options;
    if (superseded !== undefined) {
      await this.supersede(superseded);
      return undefined;
    }
    const applied: string[] = [];
    const plans: CallPlan[] = [];
    for (const call of calls) plans.push(await this.restore(call, applied));
    this.plans = plans;
    if (this.scope.options.decisions.length > 0 && plans.some(isAwaitingDecision)) {
      // Decisions for some tickets only: C0 records them, and nothing runs until every ticket is decided.
      this.recordOutcomes(plans, applied);
      if (this.scope.durable) await this.checkpointer.commitDecisions('waiting');
      return this.close(plans, undefined);
    }
    const blocked = await this.decide(plans, undefined);
    this.recordOutcomes(plans, applied);
    if (this.scope.durable) await this.commitOutcomes(plans, true);
    this.announce(plans);
    const running = this.run(plans, undefined);
    if (running) await running;
    const outcome = this.close(plans, blocked);
    // A resumed call's completion must be durable before the next model call.
    if (this.scope.durable && !outcome.suspended && outcome.blocked === undefined) {
      await this.checkpointer.commitStepEnd();
    }
    return outcome;
  }

  /**
   * New input replaces a waiting run: each open call is answered (a recorded result, declined as superseded, or
   * cancelled before it could run), the records cleared and that run ended `cancelled` — C0, before the input.
   */
  private async supersede(superseded: RunRecord): Promise<void> {
    const { scope } = this;
    const parts = answerOpenStep(scope.messages, scope.state.peek(toolCallsKey), (record) =>
      record?.status === 'suspended' && record.ticket
        ? supersededResult(record.ticket)
        : cancelledResult('the user sent a new message before this call could run'),
    );
    const message: ToolMessage = {
      id: createId(),
      role: 'tool',
      content: parts,
      metadata: { runId: superseded.identity.runId, step: superseded.steps, superseded: true },
    };
    scope.append(message);
    this.clearRecords();
    await this.checkpointer.commitSupersede(superseded);
  }

  /**
   * Answers every unanswered call of the open step when the run ends cancelled or failed: with its result
   * when it has one (in this process, in a record), otherwise as cancelled, so no later run executes it.
   */
  answerOpenCalls(why: string): void {
    if (!this.hasOpenStep()) return;
    const parts = answerOpenStep(this.scope.messages, this.scope.state.peek(toolCallsKey), () =>
      cancelledResult(why),
    );
    const current = new Map(this.plans.map((plan) => [plan.call.toolCallId, plan]));
    for (const part of parts) {
      const known = current.get(part.toolCallId)?.result;
      if (known) part.result = known;
    }
    this.appendToolMessage(parts);
    this.clearRecords();
  }

  /** The run was cancelled: running calls are told, and abandoned if they do not stop. */
  cancel(): void {
    this.clock?.cancelAll();
  }

  dispose(): void {
    this.clock?.dispose();
  }

  private get runningClock(): ToolClock {
    if (this.clock === undefined) {
      const { scope } = this;
      const graceMs = scope.agent.definition.toolExecution?.cancelGraceMs ?? DEFAULT_TOOL_CANCEL_GRACE_MS;
      this.clock = new ToolClock(scope.signal, graceMs);
    }
    return this.clock;
  }

  /** A call of the open step as the store left it (see the recovery table above). */
  private async restore(call: ToolCall, applied: string[]): Promise<CallPlan> {
    const { scope } = this;
    const { previous, decisions, input } = scope.options;
    const record = scope.state.peek(toolCallsKey)[call.toolCallId];
    const runId = record?.runId ?? previous?.identity.runId ?? scope.identity.runId;
    if (record) {
      // The record's phase, except that a call recorded allowed or running begins again (the ledger tells).
      const waiting = record.status === 'suspended' && record.ticket !== undefined;
      const status =
        record.result || waiting || record.status === 'resuming' ? record.status : ('allowed' as const);
      const plan = restoredPlan(call, runId, status);
      if (record.ticket) plan.ticket = record.ticket;
      if (record.decision) plan.decision = record.decision;
      if (record.attempts !== undefined) plan.attempts = record.attempts;
      if (record.result) {
        plan.result = record.result;
        plan.resultFrom = 'record';
        this.ledgerHit(plan, 'record');
        return plan;
      }
      if (waiting && plan.ticket) {
        const ticketId = plan.ticket.id;
        const decision = decisions.find((candidate) => candidate.ticketId === ticketId);
        if (decision) {
          this.applyDecision(plan, decision);
          applied.push(decision.decisionId);
          // Settled by the decision after an attempt started (it asked, or was cut off): C0 completes its entry.
          if (plan.result && plan.attempts !== undefined && scope.durable) await this.completeDecided(plan);
        } else if (input.length > 0) {
          settle(plan, 'cancelled', supersededResult(plan.ticket));
        }
      }
      return plan;
    }
    const plan = newPlan(call, runId);
    if (previous?.status !== 'running' || !scope.durable) {
      settle(plan, 'cancelled', cancelledResult('the run ended before this call finished'));
      return plan;
    }
    // The process running this step died: the ledger tells what became of the call.
    const entry = await this.checkpointer.lookup(plan.runId, call);
    if (entry?.status === 'completed' && entry.result) {
      moveTo(plan, entry.result.status === 'error' ? 'failed' : 'succeeded');
      plan.result = entry.result;
      plan.resultFrom = 'ledger';
      this.ledgerHit(plan, 'ledger');
    } else if (entry) {
      moveTo(plan, 'allowed');
      plan.ledger = 'begin';
      this.interrupted(plan, entry, this.interruptPolicy(call));
    }
    return plan;
  }

  /** Rides the completion of a decided call's in-flight ledger entry in C0, with the record of its outcome. */
  private async completeDecided(plan: CallPlan): Promise<void> {
    const { checkpointer } = this;
    const entry = await checkpointer.lookup(plan.runId, plan.call);
    if (entry?.status === 'in-flight' && plan.result)
      checkpointer.ride(checkpointer.completion(entry, plan.result));
  }

  /** The interrupt policy of a call: the plugins' most careful answer, else the tool's, else the agent's. */
  private interruptPolicy(call: ToolCall): InterruptPolicy {
    const { agent } = this.scope;
    const resolvers = agent.plugins.interruptPolicies;
    let policy: InterruptPolicy | undefined;
    if (resolvers.length > 0) {
      const parsed = parseArguments(call.arguments);
      const annotations = agent.tools.get(call.toolName)?.annotations;
      const request = {
        toolName: call.toolName,
        input: parsed.ok ? parsed.value : undefined,
        ...(annotations === undefined ? {} : { annotations }),
      };
      for (const resolve of resolvers) {
        const answer = resolve(request);
        if (answer !== undefined && (policy === undefined || CAREFUL[answer] > CAREFUL[policy]))
          policy = answer;
      }
    }
    return (
      policy ?? agent.tools.get(call.toolName)?.interruptPolicy ?? agent.definition.interruptPolicy ?? 'rerun'
    );
  }

  /**
   * An interrupted call (its ledger entry in flight from an attempt that died): `fail` settles it, `ask`
   * suspends it with an `interrupted-call` ticket. True when so handled; false under `rerun` (it runs again).
   */
  private interrupted(plan: CallPlan, entry: ToolExecution, policy: InterruptPolicy): boolean {
    if (policy === 'rerun') return false;
    const { call } = plan;
    if (policy === 'fail') {
      const result = interruptedResult('It will not run again.');
      settle(plan, 'failed', result);
      if (this.scope.durable) this.checkpointer.ride(this.checkpointer.completion(entry, result));
      return true;
    }
    plan.attempts = entry.attempts;
    const parsed = parseArguments(call.arguments);
    this.gate.suspend(plan, {
      action: INTERRUPTED_CALL_ACTION,
      message: `The call of "${call.toolName}" was cut off after it started (the process running it stopped), so it may or may not have taken effect. Run it again, treat it as done (with its result), or fail it?`,
      parameters: {
        toolName: call.toolName,
        arguments: parsed.ok ? ((parsed.value ?? null) as never) : call.arguments,
        idempotencyKey: entry.idempotencyKey,
        attempts: entry.attempts,
      },
      responseSchema: INTERRUPTED_CALL_RESPONSE_SCHEMA,
      resumeMode: 'pass-decision-to-tool',
    });
    return true;
  }

  /** A decision for a suspended call: decline it, take the payload as its result, or let it run. */
  private applyDecision(plan: CallPlan, decision: ResumeDecision): void {
    const { scope } = this;
    scope.instrumentation?.toolCallResumed(plan.call.toolCallId, decision);
    if (scope.listening)
      scope.emit({ type: 'tool-call-resumed', toolCallId: plan.call.toolCallId, decision });
    decideCall(plan, decision);
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
   * C1 (or C0 when resuming): the call records, an in-flight ledger entry for each call that starts now (claimed
   * by the checkpointer) and whatever the step added (the assistant message) — one commit, before any tool
   * starts.
   */
  private commitOutcomes(plans: CallPlan[], resuming: boolean): Promise<void> {
    const starting = plans.filter((plan) => isRunnable(plan) && plan.ledger === 'claim');
    return this.checkpointer.commitOutcomes(starting, resuming ? 'C0' : 'C1');
  }

  /** Tells listeners of the tickets, once they are durable. */
  private announce(plans: CallPlan[]): void {
    const { scope } = this;
    for (const plan of plans) {
      if (!plan.newlySuspended) continue;
      plan.newlySuspended = false;
      if (plan.ticket) scope.instrumentation?.toolCallSuspended(plan.ticket);
      if (scope.listening && plan.ticket) scope.emit({ type: 'tool-call-suspended', ticket: plan.ticket });
    }
  }

  /**
   * Runs the runnable calls, sequentially or in parallel, making each completion durable in time. Results are
   * reported in call order (sequential mode) or as they come (parallel mode). Undefined when nothing runs.
   */
  private run(plans: CallPlan[], response: ModelResponse | undefined): Promise<void> | undefined {
    if (this.scope.agent.definition.toolExecution?.mode === 'parallel')
      return this.runParallel(plans, response);
    if (plans.length === 1) {
      // The common step: one call, nothing to flush before another starts.
      const plan = plans[0] as CallPlan;
      if (isRunnable(plan)) return this.runOne(plan, response);
      if (plan.resultFrom !== 'record') this.report(plan);
      return undefined;
    }
    return this.runSequential(plans, response);
  }

  /** `run` in sequential mode: one call after another, each completion durable before the next starts. */
  private async runSequential(plans: CallPlan[], response: ModelResponse | undefined): Promise<void> {
    let remaining = 0;
    for (const plan of plans) if (isRunnable(plan)) remaining++;
    for (const plan of plans) {
      if (!isRunnable(plan)) {
        if (plan.resultFrom !== 'record') this.report(plan);
        continue;
      }
      await this.runOne(plan, response);
      // The next call may not start before this one's completion is in the store.
      if (--remaining > 0 && plan.execution?.status === 'completed') await this.flushCompletion(plan);
    }
  }

  /** `run` in parallel mode: up to `concurrency` calls at once, results reported as they come. */
  private async runParallel(plans: CallPlan[], response: ModelResponse | undefined): Promise<void> {
    const runnable = plans.filter(isRunnable);
    for (const plan of plans) if (!isRunnable(plan) && plan.resultFrom !== 'record') this.report(plan);
    const limit = Math.max(1, this.scope.agent.definition.toolExecution?.concurrency ?? 8);
    let next = 0;
    let unfinished = runnable.length;
    const worker = async () => {
      while (next < runnable.length) {
        const plan = runnable[next++] as CallPlan;
        try {
          await this.runOne(plan, response);
        } finally {
          unfinished--;
        }
        // Each completion is written as it finishes; the last one rides in the step's checkpoint.
        if (unfinished > 0 && plan.execution?.status === 'completed') await this.flushCompletion(plan);
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, runnable.length) }, worker));
  }

  private async flushCompletion(plan: CallPlan): Promise<void> {
    if (plan.execution?.status === 'completed') await this.checkpointer.complete(plan.execution);
  }

  /** BeforeToolExecute → start in the ledger → execute → completion → AfterToolExecute. */
  private async runOne(plan: CallPlan, response: ModelResponse | undefined): Promise<void> {
    const { scope, checkpointer } = this;
    const { call } = plan;
    const tool = scope.agent.tools.get(call.toolName);
    if (!tool || (plan.input === undefined && !this.gate.parse(plan, tool))) {
      if (!tool) settle(plan, 'failed', errorResult(`Unknown tool "${call.toolName}".`));
      this.report(plan);
      return;
    }
    if (scope.durable && plan.ledger === 'begin') {
      // A resumed call may have been cut off in an earlier attempt: its interrupt policy decides first.
      const policy = this.interruptPolicy(call);
      if (policy !== 'rerun') {
        const entry = await checkpointer.lookup(plan.runId, call);
        if (
          entry?.status === 'in-flight' &&
          entry.attempts > (plan.attempts ?? 0) &&
          this.interrupted(plan, entry, policy)
        ) {
          if (plan.status === 'suspended') this.announce([plan]);
          else this.report(plan);
          return;
        }
      }
    }
    if (scope.engine.isActive('BeforeToolExecute')) {
      const toolCall = { ...call, input: plan.input };
      await scope.engine.run('BeforeToolExecute', scope.base(response, toolCall, undefined, plan.decision));
    }
    if (scope.signal.aborted || !scope.holdsLease()) return this.notStarted(plan);
    const key = plan.execution?.idempotencyKey ?? idempotencyKey(plan.runId, toolCallIdentity(call));
    let rerun = false;
    if (scope.durable && plan.ledger === 'begin') {
      const entry = await checkpointer.begin(plan.runId, call);
      if (entry?.status === 'completed' && entry.result) {
        moveTo(plan, entry.result.status === 'error' ? 'failed' : 'succeeded');
        plan.result = entry.result;
        plan.resultFrom = 'ledger';
        this.ledgerHit(plan, 'ledger');
        await this.afterExecute(plan, response);
        return;
      }
      plan.execution = entry;
      // An interrupted call a person chose to run again is a re-run whatever the attempts say.
      rerun =
        (entry?.attempts ?? 1) > (plan.attempts ?? 0) + 1 || plan.ticket?.action === INTERRUPTED_CALL_ACTION;
    }
    // Last look before the side effect: another process may hold the thread now if this one stalled.
    if (!scope.holdsLease()) return this.notStarted(plan);
    moveTo(plan, 'running');
    if (scope.listening) {
      scope.emit({
        type: 'tool-execution-start',
        step: scope.progress.step,
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        idempotencyKey: key,
        rerun,
      });
    }
    const timeoutMs =
      tool.timeoutMs ?? scope.agent.definition.toolExecution?.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    const observed = scope.instrumentation?.toolCallStarted({
      step: scope.progress.step,
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      arguments: call.arguments,
      idempotencyKey: key,
      rerun,
      attempt: plan.execution?.attempts ?? 1,
    });
    const context = new ToolCallContext(
      scope,
      this.runningClock,
      tool,
      plan.input,
      call.toolCallId,
      toolCallIdentity(call),
      plan.runId,
      call.toolName,
      key,
      rerun,
      plan.decision,
      timeoutMs,
      this.errorPolicy(call.toolName),
    );
    const invocation = await invokeTool(context);
    if (context.committed) {
      // Its effect committed with the ledger completion: that result is the call's, whatever followed.
      moveTo(plan, context.committed.status === 'error' ? 'failed' : 'succeeded');
      plan.result = context.committed;
      observed?.end({ status: plan.status, result: plan.result });
      if (invocation.command) await scope.engine.apply(invocation.command, scope.base(response));
      if (scope.engine.isActive('AfterToolExecute')) await this.afterExecute(plan, response);
      else this.settled(plan);
      return;
    }
    if (invocation.suspend) {
      // The tool asked for a decision: it runs again once decided (its ledger entry stays in flight).
      if (this.gate.suspend(plan, invocation.suspend)) {
        plan.attempts = plan.execution?.attempts ?? 1;
        observed?.end({ status: 'suspended', suspended: true });
        this.announce([plan]);
        return;
      }
    } else {
      moveTo(plan, invocation.status);
      plan.result = invocation.result;
    }
    if (observed) {
      if (plan.result) observed.end({ status: plan.status, result: plan.result });
      else observed.end({ status: plan.status });
    }
    // A call stopped because this process lost the thread was cut off, not finished: its entry stays in flight
    // for the next holder's interrupt policy. Any other outcome is the call's result for good.
    const cutOff =
      scope.leaseLost && (invocation.status === 'cancelled' || invocation.status === 'abandoned');
    if (scope.durable && plan.execution && plan.result && !cutOff) {
      plan.execution = checkpointer.completion(plan.execution, plan.result);
      checkpointer.ride(plan.execution);
    }
    if (invocation.command) await scope.engine.apply(invocation.command, scope.base(response));
    if (scope.engine.isActive('AfterToolExecute')) await this.afterExecute(plan, response);
    else this.settled(plan);
  }

  /**
   * The run was cancelled, or lost its thread's lease, before this call could start: it is answered as
   * cancelled and never runs here. After a lease loss nothing is written (the next holder of the thread runs it).
   */
  private notStarted(plan: CallPlan): void {
    const { scope, checkpointer } = this;
    const lost = scope.leaseLost;
    const result = cancelledResult(
      lost
        ? 'this process lost the thread before the call could start'
        : 'the run was cancelled before this call could start',
    );
    settle(plan, 'cancelled', result);
    if (scope.durable && !lost && plan.execution?.status === 'in-flight') {
      plan.execution = checkpointer.completion(plan.execution, result);
      checkpointer.ride(plan.execution);
    }
    this.report(plan);
  }

  private async afterExecute(plan: CallPlan, response: ModelResponse | undefined): Promise<void> {
    const { scope } = this;
    const result = plan.result;
    if (result && scope.engine.isActive('AfterToolExecute')) {
      const toolCall = { ...plan.call, input: plan.input };
      await scope.engine.run('AfterToolExecute', scope.base(response, toolCall, result, plan.decision));
    }
    this.settled(plan);
  }

  /** A call has its result: error counters, the `stop` error policy, and the event. */
  private settled(plan: CallPlan): void {
    const { scope } = this;
    const result = plan.result;
    if (!result) return;
    const progress = scope.progress;
    progress.consecutiveToolErrors = result.status === 'error' ? progress.consecutiveToolErrors + 1 : 0;
    if (result.status === 'error' && this.errorPolicy(plan.call.toolName).policy === 'stop') {
      scope.toolErrorStop = `${plan.call.toolName}: ${result.message ?? 'error'}`;
    }
    this.report(plan);
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
    this.clearRecords();
    return outcome;
  }

  /** Tells the run's observer of a call that got its result without running. */
  private ledgerHit(plan: CallPlan, source: 'ledger' | 'record'): void {
    const { instrumentation, progress } = this.scope;
    if (!instrumentation) return;
    const { toolCallId, toolName } = plan.call;
    instrumentation.ledgerHit({ step: progress.step, toolCallId, toolName, source });
  }

  /** Emits a call's result once. */
  private report(plan: CallPlan): void {
    const { scope } = this;
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

  private appendToolMessage(parts: ToolResultPart[]): void {
    if (parts.length === 0) return;
    const message: ToolMessage = {
      id: createId(),
      role: 'tool',
      content: parts,
      metadata: { runId: this.scope.identity.runId, step: this.scope.progress.step },
    };
    this.scope.append(message);
  }

  private clearRecords(): void {
    const { state } = this.scope;
    if (!state.written(toolCallsKey)) return;
    for (const _ in state.peek(toolCallsKey)) {
      state.write([{ key: toolCallsKey, update: { type: 'clear' } }]);
      return;
    }
  }

  private errorPolicy(toolName: string): ToolErrorPolicy {
    const definition = this.scope.agent.definition;
    return definition.toolErrorPolicies?.[toolName] ?? definition.toolErrorPolicy ?? CONTINUE;
  }
}

const NO_PLANS: readonly CallPlan[] = Object.freeze([]);

/** A call restored still waiting for its ticket's decision (not one suspended in this process). */
function isAwaitingDecision(plan: CallPlan): boolean {
  return plan.status === 'suspended' && !plan.newlySuspended && plan.result === undefined;
}

function anySuspended(plans: readonly CallPlan[]): boolean {
  for (const plan of plans) if (plan.status === 'suspended') return true;
  return false;
}

const CONTINUE: ToolErrorPolicy = Object.freeze({ policy: 'continue' });

/** How careful an interrupt policy is: the most careful answer of the plugins wins. */
const CAREFUL: Record<InterruptPolicy, number> = { rerun: 0, fail: 1, ask: 2 };

/** The response schema of an `interrupted-call` ticket (`interruptedCallPayloadSchema` as JSON Schema). */
const INTERRUPTED_CALL_RESPONSE_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    choice: { type: 'string', enum: ['rerun', 'done', 'fail'] },
    result: {},
    message: { type: 'string' },
  },
  required: ['choice'],
  additionalProperties: false,
};

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
