import {
  INTERRUPTED_CALL_ACTION,
  type InstrumentedOperation,
  type ToolCallOutcome,
  toolCallIdentity,
} from '@lunation/contract';
import { DEFAULT_TOOL_CANCEL_GRACE_MS, DEFAULT_TOOL_TIMEOUT_MS, type ToolErrorPolicy } from '../agent.js';
import type { ModelResponse } from '../plugin.js';
import type { AnyTool } from '../tool.js';
import { type CallPlan, cancelledResult, errorResult, isRunnable, moveTo, settle } from './call-plan.js';
import { idempotencyKey } from './checkpointer.js';
import { interruptedBefore } from './interrupted-calls.js';
import { ToolClock } from './tool-clock.js';
import { type Invocation, invokeTool, ToolCallContext } from './tool-invoker.js';
import { announceTickets, reportLedgerHit, reportResult, type ToolStage } from './tool-stage.js';

/** A call that may start: its tool, identity, idempotency key and whether it runs again after an earlier attempt. */
interface Start {
  tool: AnyTool;
  callId: string;
  key: string;
  rerun: boolean;
}

/** A call running: the context it runs with, how it will end, and the observer's record of it. */
interface Ran {
  context: ToolCallContext;
  invocation: Promise<Invocation>;
  observed: InstrumentedOperation<ToolCallOutcome> | undefined;
}

/**
 * Runs the runnable calls of a step, each as begin (its checks, BeforeToolExecute, its start in the ledger) →
 * invoke (the tool, under its clock) → settle (its result, its completion, AfterToolExecute, the event), and
 * makes each completion durable in time (see the protocol in `tool-calls.ts`).
 */
export class ToolRunner {
  /** Made when the first call runs. */
  private clock: ToolClock | undefined;

  constructor(private readonly stage: ToolStage) {}

  /**
   * Runs the runnable calls, sequentially or in parallel. Results are reported in call order (sequential mode)
   * or as they come (parallel mode). Undefined when nothing runs.
   */
  run(plans: CallPlan[], response: ModelResponse | undefined): Promise<void> | undefined {
    if (this.stage.scope.agent.definition.toolExecution?.mode === 'parallel') {
      return this.runParallel(plans, response);
    }
    if (plans.length === 1) {
      // The common step: one call, nothing to flush before another starts.
      const plan = plans[0] as CallPlan;
      if (isRunnable(plan)) return this.runOne(plan, response);
      if (plan.resultFrom !== 'record') reportResult(this.stage.scope, plan);
      return undefined;
    }
    return this.runSequential(plans, response);
  }

  /** The run was cancelled: running calls are told, and abandoned if they do not stop. */
  cancel(): void {
    this.clock?.cancelAll();
  }

  dispose(): void {
    this.clock?.dispose();
  }

  /** The error policy of a tool: its own, else the agent's, else `continue`. */
  errorPolicy(toolName: string): ToolErrorPolicy {
    const definition = this.stage.scope.agent.definition;
    return definition.toolErrorPolicies?.[toolName] ?? definition.toolErrorPolicy ?? CONTINUE;
  }

  private get runningClock(): ToolClock {
    if (this.clock === undefined) {
      const { scope } = this.stage;
      const graceMs = scope.agent.definition.toolExecution?.cancelGraceMs ?? DEFAULT_TOOL_CANCEL_GRACE_MS;
      this.clock = new ToolClock(scope.signal, graceMs, scope.clock);
    }
    return this.clock;
  }

  /** `run` in sequential mode: one call after another, each completion durable before the next starts. */
  private async runSequential(plans: CallPlan[], response: ModelResponse | undefined): Promise<void> {
    let remaining = 0;
    for (const plan of plans) if (isRunnable(plan)) remaining++;
    for (const plan of plans) {
      if (!isRunnable(plan)) {
        if (plan.resultFrom !== 'record') reportResult(this.stage.scope, plan);
        continue;
      }
      await this.runOne(plan, response);
      // The next call may not start before this one's completion is in the store.
      if (--remaining > 0 && plan.execution?.status === 'completed') await this.flushCompletion(plan);
    }
  }

  /** `run` in parallel mode: up to `concurrency` calls at once, results reported as they come. */
  private async runParallel(plans: CallPlan[], response: ModelResponse | undefined): Promise<void> {
    const { scope } = this.stage;
    const runnable = plans.filter(isRunnable);
    for (const plan of plans)
      if (!isRunnable(plan) && plan.resultFrom !== 'record') reportResult(scope, plan);
    const limit = Math.max(1, scope.agent.definition.toolExecution?.concurrency ?? 8);
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
    if (plan.execution?.status === 'completed') await this.stage.checkpointer.complete(plan.execution);
  }

  /** One call: begin → invoke → settle. */
  private async runOne(plan: CallPlan, response: ModelResponse | undefined): Promise<void> {
    // begin and settle await only what a call needs (a hook, the ledger): one async frame per call here.
    const begun = this.begin(plan, response);
    const start = begun instanceof Promise ? await begun : begun;
    if (start === undefined) return;
    const ran = this.invoke(plan, start);
    const settling = this.settle(plan, ran, await ran.invocation, response);
    if (settling) await settling;
  }

  /**
   * Everything before the side effect: the tool and its arguments, the interrupt policy of a call cut off
   * earlier, BeforeToolExecute, the lease, and its start in the ledger (`begin`: the recorded result instead
   * when an earlier attempt finished it). Undefined when the call does not run here (it is answered already).
   */
  private begin(
    plan: CallPlan,
    response: ModelResponse | undefined,
  ): Start | undefined | Promise<Start | undefined> {
    const { scope } = this.stage;
    const { call } = plan;
    const tool = scope.agent.tools.get(call.toolName);
    if (!tool || (plan.input === undefined && !this.stage.gate.parse(plan, tool))) {
      if (!tool) settle(plan, 'failed', errorResult(`Unknown tool "${call.toolName}".`));
      reportResult(scope, plan);
      return undefined;
    }
    const begins = scope.durable && plan.ledger === 'begin';
    if (begins || scope.engine.isActive('BeforeToolExecute')) return this.beginAwaiting(plan, tool, response);
    if (scope.signal.aborted || !scope.holdsLease()) return notStarted(this.stage, plan);
    const callId = toolCallIdentity(call);
    const key = plan.execution?.idempotencyKey ?? idempotencyKey(plan.runId, callId);
    moveTo(plan, 'running');
    return { tool, callId, key, rerun: false };
  }

  /** `begin` for a call that awaits something first: BeforeToolExecute hooks, or its start in the ledger. */
  private async beginAwaiting(
    plan: CallPlan,
    tool: AnyTool,
    response: ModelResponse | undefined,
  ): Promise<Start | undefined> {
    const { scope } = this.stage;
    const { call } = plan;
    const begins = scope.durable && plan.ledger === 'begin';
    if (begins && (await interruptedBefore(this.stage, plan))) return undefined;
    if (scope.engine.isActive('BeforeToolExecute')) {
      const toolCall = { ...call, input: plan.input };
      await scope.engine.run('BeforeToolExecute', scope.base(response, toolCall, undefined, plan.decision));
    }
    if (scope.signal.aborted || !scope.holdsLease()) return notStarted(this.stage, plan);
    const callId = toolCallIdentity(call);
    const key = plan.execution?.idempotencyKey ?? idempotencyKey(plan.runId, callId);
    let rerun = false;
    if (begins) {
      const entry = await this.stage.checkpointer.begin(plan.runId, call);
      if (entry?.status === 'completed' && entry.result) {
        moveTo(plan, entry.result.status === 'error' ? 'failed' : 'succeeded');
        plan.result = entry.result;
        plan.resultFrom = 'ledger';
        reportLedgerHit(scope, plan, 'ledger');
        await this.afterExecute(plan, response);
        return undefined;
      }
      plan.execution = entry;
      // An interrupted call a person chose to run again is a re-run whatever the attempts say.
      rerun =
        (entry?.attempts ?? 1) > (plan.attempts ?? 0) + 1 || plan.ticket?.action === INTERRUPTED_CALL_ACTION;
    }
    // Last look before the side effect: another process may hold the thread now if this one stalled.
    if (!scope.holdsLease()) return notStarted(this.stage, plan);
    moveTo(plan, 'running');
    return { tool, callId, key, rerun };
  }

  /** The side effect: the tool runs under its timeout, the run's cancellation and its error policy. */
  private invoke(plan: CallPlan, start: Start): Ran {
    const { scope } = this.stage;
    const { call } = plan;
    const { tool, callId, key, rerun } = start;
    const step = scope.progress.step;
    const { toolCallId, toolName } = call;
    if (scope.listening) {
      scope.emit({ type: 'tool-execution-start', step, toolCallId, toolName, idempotencyKey: key, rerun });
    }
    const observed = scope.instrumentation?.toolCallStarted({
      step,
      toolCallId,
      toolName,
      arguments: call.arguments,
      idempotencyKey: key,
      rerun,
      attempt: plan.execution?.attempts ?? 1,
    });
    const context = new ToolCallContext({
      scope,
      clock: this.runningClock,
      tool,
      input: plan.input,
      toolCallId,
      callId,
      ledgerRunId: plan.runId,
      toolName,
      idempotencyKey: key,
      rerun,
      decision: plan.decision,
      timeoutMs: tool.timeoutMs ?? scope.agent.definition.toolExecution?.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
      policy: this.errorPolicy(toolName),
    });
    return { context, invocation: invokeTool(context), observed };
  }

  /**
   * After the side effect: the call's result (the one its transaction committed, if any), a ticket when the
   * tool asked for a decision, its ledger completion riding in the next commit, its command, AfterToolExecute.
   */
  private settle(
    plan: CallPlan,
    ran: Ran,
    invocation: Invocation,
    response: ModelResponse | undefined,
  ): Promise<void> | undefined {
    const { scope, checkpointer } = this.stage;
    const { context, observed } = ran;
    if (context.committed) {
      // Its effect committed with the ledger completion: that result is the call's, whatever followed.
      moveTo(plan, context.committed.status === 'error' ? 'failed' : 'succeeded');
      plan.result = context.committed;
      observed?.end({ status: plan.status, result: plan.result });
      if (invocation.command) return this.applyCommand(plan, invocation, response);
      return this.afterExecuted(plan, response);
    }
    if (invocation.suspend) {
      // The tool asked for a decision: it runs again once decided (its ledger entry stays in flight).
      if (this.stage.gate.suspend(plan, invocation.suspend)) {
        plan.attempts = plan.execution?.attempts ?? 1;
        observed?.end({ status: 'suspended', suspended: true });
        announceTickets(scope, [plan]);
        return undefined;
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
      (invocation.status === 'cancelled' || invocation.status === 'abandoned') && scope.leaseLost;
    if (scope.durable && plan.execution && plan.result && !cutOff) {
      plan.execution = checkpointer.completion(plan.execution, plan.result);
      checkpointer.ride(plan.execution);
    }
    if (invocation.command) return this.applyCommand(plan, invocation, response);
    return this.afterExecuted(plan, response);
  }

  /** The state command a tool returned with its result, then AfterToolExecute. */
  private async applyCommand(
    plan: CallPlan,
    invocation: Invocation,
    response: ModelResponse | undefined,
  ): Promise<void> {
    const { scope } = this.stage;
    if (invocation.command) await scope.engine.apply(invocation.command, scope.base(response));
    await this.afterExecuted(plan, response);
  }

  /** AfterToolExecute when a plugin hooks it (no extra await otherwise), then the call is settled. */
  private afterExecuted(plan: CallPlan, response: ModelResponse | undefined): Promise<void> | undefined {
    if (this.stage.scope.engine.isActive('AfterToolExecute')) return this.afterExecute(plan, response);
    this.settled(plan);
    return undefined;
  }

  /** AfterToolExecute (when a plugin hooks it), then the call's result is settled. */
  private async afterExecute(plan: CallPlan, response: ModelResponse | undefined): Promise<void> {
    const { scope } = this.stage;
    const result = plan.result;
    if (result && scope.engine.isActive('AfterToolExecute')) {
      const toolCall = { ...plan.call, input: plan.input };
      await scope.engine.run('AfterToolExecute', scope.base(response, toolCall, result, plan.decision));
    }
    this.settled(plan);
  }

  /** A call has its result: error counters, the `stop` error policy, and the event. */
  private settled(plan: CallPlan): void {
    const { scope } = this.stage;
    const result = plan.result;
    if (!result) return;
    const progress = scope.progress;
    progress.consecutiveToolErrors = result.status === 'error' ? progress.consecutiveToolErrors + 1 : 0;
    if (result.status === 'error' && this.errorPolicy(plan.call.toolName).policy === 'stop') {
      scope.toolErrorStop = `${plan.call.toolName}: ${result.message ?? 'error'}`;
    }
    reportResult(scope, plan);
  }
}

/**
 * The run was cancelled, or lost its thread's lease, before this call could start: it is answered as
 * cancelled and never runs here. After a lease loss nothing is written (the next holder of the thread runs it).
 */
function notStarted(stage: ToolStage, plan: CallPlan): undefined {
  const { scope, checkpointer } = stage;
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
  reportResult(scope, plan);
  return undefined;
}

const CONTINUE: ToolErrorPolicy = Object.freeze({ policy: 'continue' });
