import {
  type InstrumentedOperation,
  type Message,
  type ModelCallOutcome,
  type ModelRequest,
  type TerminationReason,
  toErrorInfo,
} from '@lunation/contract';
import type { TaskRecord } from '../background-tasks.js';
import type { ModelResponse } from '../plugin.js';
import { Checkpointer } from './checkpointer.js';
import { compactIfNeeded } from './compaction.js';
import { type DeliveryMode, Inbox } from './inbox.js';
import { type Inference, infer } from './inference.js';
import { buildRequest } from './model-request.js';
import { RunDeadline } from './run-deadline.js';
import { finishRun } from './run-end.js';
import { abortReason, NO_USAGE, type RunLoopOptions, type RunResult, RunScope } from './run-scope.js';
import { evaluateStopConditions, timedOut } from './stop-conditions.js';
import { isLunationError } from './storable.js';
import { checkOutput, type OutputSpec, resolveOutput } from './structured-output.js';
import { ToolCalls, type ToolStepOutcome } from './tool-calls.js';

/**
 * One run of the agent loop: RunStart → resume the open step (decisions, recovery) → [StepStart → inference →
 * tool calls → StepEnd → checkpoint]* → RunEnd. The stages live in their own modules; the tool-call protocol,
 * which keeps approvals and the ledger right through crashes, is `tool-calls.ts`; the run's end is
 * `run-end.ts`.
 */
export class AgentLoop {
  declare private readonly scope: RunScope; // set by the constructor: `declare`d (see `RunScope`)
  declare private readonly inbox: Inbox;
  declare private readonly checkpointer: Checkpointer;
  declare private readonly toolCalls: ToolCalls;
  /** Model calls get their own abort signal so that `interrupt` input can stop one without ending the run. */
  private inferenceAbort = new AbortController();
  private inferring = false;
  private interrupted = false;
  /** The agent's `timeout` stop condition, when it has one. */
  declare private readonly deadline: RunDeadline | undefined;
  declare private readonly output: OutputSpec | undefined;

  constructor(options: RunLoopOptions) {
    this.deadline = RunDeadline.arm(options);
    const runOptions = this.deadline?.options ?? options;
    const scope = new RunScope(runOptions);
    this.scope = scope;
    this.inbox = new Inbox(scope);
    this.checkpointer = new Checkpointer(scope);
    this.toolCalls = new ToolCalls(scope, this.checkpointer);
    this.output = resolveOutput(scope);
    // One callback for every part of the run that must hear of a cancel.
    const onAbort = () => {
      this.inferenceAbort.abort(scope.signal.reason);
      this.toolCalls.cancel();
      this.inbox.wakeUp();
    };
    if (runOptions.controller) runOptions.controller.onAbort(onAbort);
    else scope.signal.addEventListener('abort', onAbort, { once: true });
  }

  /** Adds input to the live run: delivered at the next step boundary, before the next model call. */
  deliver(messages: Message[], mode: DeliveryMode): void {
    this.inbox.deliver(messages, mode);
    if (mode === 'interrupt' && this.inferring) {
      this.interrupted = true;
      this.inferenceAbort.abort('interrupted by new input');
    }
  }

  /** A background task of this thread finished. */
  deliverTask(task: TaskRecord): void {
    this.inbox.deliverTask(task);
  }

  /** Ends a kept-alive run once it is idle. */
  close(): void {
    this.inbox.close();
  }

  /**
   * Builds a run's loop and starts it, in one call: `built` gets the loop before it runs (to deliver to it or
   * close it); the promise settles when the run ends or waits for decisions or tasks. Throws (synchronously,
   * having run nothing) when the loop cannot be built.
   */
  static start(options: RunLoopOptions, built: (loop: AgentLoop) => void): Promise<RunResult> {
    const loop = new AgentLoop(options);
    built(loop);
    return loop.execute();
  }

  /** Runs the loop until the run ends or waits for decisions or tasks; resolves with its result. */
  private async execute(): Promise<RunResult> {
    const { scope } = this;
    const { input } = scope.options;
    if (scope.listening) {
      scope.emit({
        type: 'run-start',
        input,
        resumed: scope.options.previous !== undefined,
        timestamp: scope.clock.now(),
      });
    }
    let termination: TerminationReason | undefined;
    try {
      scope.progressChanged();
      if (scope.engine.isActive('RunStart')) {
        // Hooks see the run's input, though it joins the thread after the open step is settled.
        const base = scope.base();
        await scope.engine.run(
          'RunStart',
          input.length === 0 ? base : { ...base, messages: [...scope.messages, ...input] },
        );
      }
      if (this.toolCalls.hasOpenStep()) termination = await this.resume();
      if (termination === undefined) {
        for (const message of input) scope.append(message);
        while (termination === undefined) termination = await this.step();
      }
    } catch (error) {
      termination = this.terminationFor(error);
    }
    const { checkpointer, toolCalls, deadline } = this;
    return finishRun({ scope, checkpointer, toolCalls, deadline }, termination);
  }

  /** Settles the thread's open step first (decisions, supersede, recovery after a crash). */
  private async resume(): Promise<TerminationReason | undefined> {
    const outcome = await this.toolCalls.resume();
    if (!outcome) return undefined;
    return this.afterTools(outcome);
  }

  /** StepStart → inference → AfterInference → tool calls or the answer → StepEnd → stop conditions → C2. */
  private async step(): Promise<TerminationReason | undefined> {
    const { scope } = this;
    const { signal } = scope;
    if (signal.aborted) return this.cancelled();
    this.startStep();
    if (scope.engine.isActive('StepStart')) await scope.engine.run('StepStart', scope.base());
    if (scope.engine.isActive('BeforeInference')) await scope.engine.run('BeforeInference', scope.base());
    if (signal.aborted) return this.cancelled();
    if (scope.agent.definition.context?.compaction) await compactIfNeeded(scope);
    if (!scope.holdsLease()) return this.cancelled();
    this.inferring = true;
    const request = buildRequest(scope);
    const observed = scope.instrumentation ? this.observeModelCall(request) : undefined;
    const inferredAt = scope.journal ? scope.clock.now() : 0; // timed for the journal (a durable store) only
    let inference: Inference;
    try {
      inference = await infer(scope, request, this.inferenceAbort.signal);
      this.inferred(inference, observed, inferredAt);
    } catch (error) {
      this.inferring = false;
      observed?.end({ error });
      if (!this.interrupted || signal.aborted) throw error;
      this.dropInterrupted();
      return undefined;
    }
    if (signal.aborted) return this.cancelled();
    const { response } = inference;
    scope.append(response.message);
    scope.finalText = response.text;
    scope.lastStopReason = response.stopReason;
    if (scope.engine.isActive('AfterInference'))
      await scope.engine.run('AfterInference', scope.base(response));
    if (signal.aborted) return this.cancelled();
    let termination =
      response.toolCalls.length > 0
        ? this.afterTools(await this.toolCalls.step(response, inference.rejectedCalls))
        : this.afterAnswer(response);
    // StepEnd, the stop conditions, what follows a reply, then C2 when the run goes on.
    if (scope.engine.isActive('StepEnd')) await scope.engine.run('StepEnd', scope.base(response));
    if (termination === undefined) termination = evaluateStopConditions(scope, response);
    if (termination?.type === 'natural-end') {
      const next = this.afterReply();
      termination = next instanceof Promise ? await next : next;
    }
    scope.progressChanged();
    if (termination === undefined) {
      if (scope.durable) await this.checkpointer.commitStepEnd();
      scope.emitStepEnd();
    }
    return termination;
  }

  /** A new step: the agent a handoff chose, the input delivered, the counters, `step-start`. */
  private startStep(): void {
    const { scope } = this;
    scope.switchAgentIfHandedOff();
    this.inbox.drain();
    scope.progress.step++;
    scope.stepUsage = NO_USAGE;
    scope.stepUsageUnknown = false;
    if (scope.listening) scope.emit({ type: 'step-start', step: scope.progress.step });
  }

  /** The model answered: the journal and the run's observer are told. */
  private inferred(
    inference: Inference,
    observed: InstrumentedOperation<ModelCallOutcome> | undefined,
    inferredAt: number,
  ): void {
    this.inferring = false;
    const { response } = inference;
    const { journal } = this.scope;
    if (journal) {
      const ms = this.scope.clock.now() - inferredAt;
      journal.inferred(this.scope.progress.step, ms, response.usage, response.message);
    }
    if (observed) {
      const usage = response.usageUnknown ? undefined : response.usage; // unknown: no counts to report
      observed.end({
        message: response.message,
        stopReason: response.stopReason,
        ...(usage ? { usage } : {}),
      });
    }
  }

  /** New input interrupted the model call: drop the partial answer and continue with the input. */
  private dropInterrupted(): void {
    this.interrupted = false;
    this.inferenceAbort = new AbortController();
    this.scope.emitStepEnd();
  }

  /** Tells the run's observer of a model call. */
  private observeModelCall(request: ModelRequest): InstrumentedOperation<ModelCallOutcome> | undefined {
    const { scope } = this;
    const { model } = scope.agent;
    return scope.instrumentation?.modelCallStarted({
      step: scope.progress.step,
      provider: model.provider,
      model: request.overrides?.model ?? model.modelId,
      request,
    });
  }

  /** How the step's tool calls end the run, if they do. */
  private afterTools(outcome: ToolStepOutcome): TerminationReason | undefined {
    const { scope } = this;
    if (scope.signal.aborted) return this.cancelled();
    if (outcome.blocked !== undefined) return { type: 'blocked', reason: outcome.blocked };
    if (outcome.suspended) return { type: 'suspended' };
    if (scope.toolErrorStop !== undefined)
      return { type: 'stopped', code: 'tool-error', detail: scope.toolErrorStop };
    return undefined;
  }

  /** An answer without tool calls ends the run, unless its structured output needs a repair round. */
  private afterAnswer(response: ModelResponse): TerminationReason | undefined {
    const { scope } = this;
    if (!this.output) return { type: 'natural-end' };
    const output = checkOutput(scope, this.output, response.text, response.stopReason === 'refusal');
    if (!output) return undefined;
    scope.output = output.value;
    return { type: 'natural-end' };
  }

  /** The model answered without tool calls: continue with new input, wait for it (a session), or end. */
  private afterReply(): TerminationReason | undefined | Promise<TerminationReason | undefined> {
    const { scope, inbox } = this;
    if (inbox.size > 0) return undefined;
    if (scope.options.keepAlive && !inbox.closed) return this.awaitInput();
    if (inbox.hasPendingTasks()) return { type: 'awaiting-tasks' };
    return { type: 'natural-end' };
  }

  /** A kept-alive run answered: checkpoint, tell the session, and wait for its next input. */
  private async awaitInput(): Promise<TerminationReason | undefined> {
    const { scope, inbox } = this;
    scope.progressChanged();
    if (scope.durable) await this.checkpointer.commitStepEnd();
    scope.emitStepEnd();
    scope.options.onTurnEnd?.({
      finalText: scope.finalText,
      steps: scope.progress.step,
      usage: scope.progress.usage,
    });
    await inbox.waitForInput();
    if (scope.signal.aborted) return this.cancelled();
    if (inbox.size > 0) return undefined;
    return { type: 'natural-end' };
  }

  private cancelled(): TerminationReason {
    const { signal } = this.scope;
    if (this.deadline?.stopped(signal))
      return timedOut(this.scope.clock.now() - this.scope.progress.startedAt);
    return { type: 'cancelled', reason: abortReason(signal) };
  }

  private terminationFor(error: unknown): TerminationReason {
    if (this.scope.signal.aborted || (isLunationError(error) && error.code === 'cancelled'))
      return this.cancelled();
    const info = toErrorInfo(error);
    if (this.scope.listening) this.scope.emit({ type: 'error', error: info });
    return { type: 'error', error: info };
  }
}
