import {
  emptyUsage,
  type InstrumentedOperation,
  LunationError,
  type Message,
  type ModelCallOutcome,
  type ModelRequest,
  statusForTermination,
  type TerminationReason,
  toErrorInfo,
  toolCallIdentity,
} from '@lunation/contract';
import type { TaskRecord } from '../background-tasks.js';
import type { ModelResponse } from '../plugin.js';
import { traceContextKey } from '../runtime-keys.js';
import { Checkpointer } from './checkpointer.js';
import { compactIfNeeded } from './compaction.js';
import { type DeliveryMode, Inbox } from './inbox.js';
import { type Inference, infer } from './inference.js';
import { buildRequest } from './model-request.js';
import {
  abortReason,
  RunAbortController,
  type RunLoopOptions,
  type RunResult,
  RunScope,
} from './run-scope.js';
import { evaluateStopConditions, runTimeoutMs, timedOut } from './stop-conditions.js';
import { isLunationError } from './storable.js';
import { checkOutput, type OutputSpec, resolveOutput } from './structured-output.js';
import { ToolCalls, type ToolStepOutcome } from './tool-calls.js';

/**
 * One run of the agent loop: RunStart → resume the open step (decisions, recovery) → [StepStart → inference →
 * tool calls → StepEnd → checkpoint]* → RunEnd. The stages live in their own modules; the tool-call protocol,
 * which keeps approvals and the ledger right through crashes, is `tool-calls.ts`.
 */
export class AgentLoop {
  private readonly scope: RunScope;
  private readonly inbox: Inbox;
  private readonly checkpointer: Checkpointer;
  private readonly toolCalls: ToolCalls;
  /** Model calls get their own abort signal so that `interrupt` input can stop one without ending the run. */
  private inferenceAbort = new AbortController();
  private inferring = false;
  private interrupted = false;
  /** The step whose `step-end` was emitted last (-1: none yet). */
  private stepEnded = -1;
  private deadline: ReturnType<typeof setTimeout> | undefined;
  private readonly output: OutputSpec | undefined;
  /** The abort reason of a run that reached its `timeout` stop condition. */
  private timeoutReason: LunationError | undefined;

  constructor(options: RunLoopOptions) {
    const limit = runTimeoutMs(options.agent.definition.stopConditions);
    let runOptions = options;
    if (limit !== undefined) {
      // The timeout stop condition also ends a run that is stuck in a model or tool call.
      const controller = new RunAbortController();
      const forward = () => controller.abort(options.signal.reason);
      if (options.controller) options.controller.onAbort(forward);
      else if (options.signal.aborted) forward();
      else options.signal.addEventListener('abort', forward, { once: true });
      const reason = new LunationError('timeout', `The run reached its ${limit} ms timeout`);
      this.timeoutReason = reason;
      this.deadline = setTimeout(() => controller.abort(reason), limit);
      this.deadline.unref?.();
      runOptions = { ...options, signal: controller.signal, controller };
    }
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
        timestamp: Date.now(),
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
    return this.finish(termination);
  }

  /** Settles the thread's open step first (decisions, supersede, recovery after a crash). */
  private async resume(): Promise<TerminationReason | undefined> {
    const outcome = await this.toolCalls.resume();
    if (!outcome) return undefined;
    if (this.scope.signal.aborted) return this.cancelled();
    if (outcome.blocked !== undefined) return { type: 'blocked', reason: outcome.blocked };
    if (outcome.suspended) return { type: 'suspended' };
    if (this.scope.toolErrorStop !== undefined) {
      return { type: 'stopped', code: 'tool-error', detail: this.scope.toolErrorStop };
    }
    return undefined;
  }

  private async step(): Promise<TerminationReason | undefined> {
    const { scope } = this;
    const { signal } = scope;
    if (signal.aborted) return this.cancelled();
    scope.switchAgentIfHandedOff();
    this.inbox.drain();
    scope.progress.step++;
    scope.stepUsage = emptyUsage();
    const step = scope.progress.step;
    if (scope.listening) scope.emit({ type: 'step-start', step });
    if (scope.engine.isActive('StepStart')) await scope.engine.run('StepStart', scope.base());
    if (scope.engine.isActive('BeforeInference')) await scope.engine.run('BeforeInference', scope.base());
    if (signal.aborted) return this.cancelled();
    if (scope.agent.definition.context?.compaction) await compactIfNeeded(scope);
    if (!scope.holdsLease()) return this.cancelled();
    let inference: Inference;
    this.inferring = true;
    const request = buildRequest(scope);
    const observed = scope.instrumentation ? this.observeModelCall(request) : undefined;
    const inferredAt = Date.now();
    try {
      inference = await infer(scope, request, this.inferenceAbort.signal);
      this.inferring = false;
      // Its arguments are not even built without a journal.
      scope.journal?.inferred(
        step,
        Date.now() - inferredAt,
        inference.response.usage,
        inference.response.toolCalls.map(toolCallIdentity),
      );
      if (observed) {
        const { response } = inference;
        const usage = response.usageUnknown ? undefined : response.usage; // unknown: no counts to report
        observed.end({
          message: response.message,
          stopReason: response.stopReason,
          ...(usage ? { usage } : {}),
        });
      }
    } catch (error) {
      this.inferring = false;
      observed?.end({ error });
      if (!this.interrupted || signal.aborted) throw error;
      // New input interrupted the model call: drop the partial answer and continue with the input.
      this.interrupted = false;
      this.inferenceAbort = new AbortController();
      this.emitStepEnd();
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
    if (scope.engine.isActive('StepEnd')) await scope.engine.run('StepEnd', scope.base(response));
    if (termination === undefined) termination = evaluateStopConditions(scope, response);
    if (termination?.type === 'natural-end') {
      const next = this.afterReply();
      termination = next instanceof Promise ? await next : next;
    }
    scope.progressChanged();
    if (termination === undefined) {
      if (scope.durable) await this.checkpointer.commitStepEnd();
      this.emitStepEnd();
    }
    return termination;
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
    if (inbox.pendingTasks().length > 0) return { type: 'awaiting-tasks' };
    return { type: 'natural-end' };
  }

  /** A kept-alive run answered: checkpoint, tell the session, and wait for its next input. */
  private async awaitInput(): Promise<TerminationReason | undefined> {
    const { scope, inbox } = this;
    scope.progressChanged();
    if (scope.durable) await this.checkpointer.commitStepEnd();
    this.emitStepEnd();
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
    if (this.timeoutReason !== undefined && signal.reason === this.timeoutReason)
      return timedOut(Date.now() - this.scope.progress.startedAt);
    return { type: 'cancelled', reason: abortReason(signal) };
  }

  private terminationFor(error: unknown): TerminationReason {
    if (this.scope.signal.aborted || (isLunationError(error) && error.code === 'cancelled'))
      return this.cancelled();
    const info = toErrorInfo(error);
    if (this.scope.listening) this.scope.emit({ type: 'error', error: info });
    return { type: 'error', error: info };
  }

  private emitStepEnd(): void {
    const { scope } = this;
    if (!scope.listening) return;
    // Once per step: a kept-alive run reports its step when it waits, and must not again when input comes.
    if (this.stepEnded === scope.progress.step) return;
    this.stepEnded = scope.progress.step;
    if (scope.options.emitStateSnapshots) {
      const snapshot = scope.state.snapshot();
      scope.emit({
        type: 'state-snapshot',
        revision: snapshot.revision,
        state: { ...snapshot.export('thread'), ...snapshot.export('run') },
      });
    }
    scope.emit({
      type: 'step-end',
      step: scope.progress.step,
      stopReason: scope.lastStopReason,
      usage: scope.stepUsage,
      ...(scope.stepUsageUnknown ? { usageUnknown: true } : {}),
    });
  }

  private async finish(reason: TerminationReason): Promise<RunResult> {
    const { scope } = this;
    if (scope.leaseLost) return await this.leftToOthers();
    let termination = reason;
    const status = statusForTermination(termination);
    if (status === 'done') {
      // A finished run leaves no call unanswered: nothing runs later behind the user's back.
      const why =
        termination.type === 'cancelled' || (termination.type === 'stopped' && termination.code === 'timeout')
          ? 'the run was stopped before this call finished'
          : 'the run ended before this call finished';
      this.toolCalls.answerOpenCalls(why);
    }
    try {
      if (termination.type !== 'cancelled' || !scope.signal.aborted) {
        if (scope.engine.isActive('RunEnd')) await scope.engine.run('RunEnd', scope.base());
      }
    } catch (error) {
      scope.emitError(error);
    }
    scope.progressChanged();
    const { instrumentation } = scope;
    if (instrumentation && status === 'waiting') {
      // The run waits: whoever resumes it, in any process, links to this run through the stored context.
      const carrier = instrumentation.suspendContext();
      if (carrier) scope.state.write([{ key: traceContextKey, update: { ...carrier } }]);
    }
    try {
      await this.checkpointer.commitRunEnd(status, termination);
    } catch (error) {
      // Fenced out: another process holds the thread now and continues the run from the store.
      if (isLunationError(error) && (error.code === 'stale-lease' || error.code === 'lease-lost')) {
        const lost =
          error.code === 'lease-lost'
            ? error
            : new LunationError('lease-lost', `The run's last commit was fenced out: ${error.message}`, {
                cause: error,
              });
        scope.options.controller?.abort(lost);
        return await this.leftToOthers(error);
      }
      scope.emitError(error);
      if (termination.type !== 'error') termination = { type: 'error', error: toErrorInfo(error) };
    }
    this.toolCalls.dispose();
    if (this.deadline !== undefined) clearTimeout(this.deadline);
    if (scope.progress.step > 0) this.emitStepEnd();
    const openTickets = this.checkpointer.currentTickets();
    instrumentation?.runEnded({
      status,
      termination,
      steps: scope.progress.step,
      usage: scope.progress.usage,
      finalText: scope.finalText,
      openTickets,
    });
    if (scope.listening) {
      scope.emit({
        type: 'run-end',
        status,
        termination,
        finalText: scope.finalText,
        steps: scope.progress.step,
        usage: scope.progress.usage,
        openTickets,
        timestamp: Date.now(),
      });
    }
    return {
      identity: scope.identity,
      status,
      termination,
      finalText: scope.finalText,
      steps: scope.progress.step,
      usage: scope.progress.usage,
      openTickets,
      messages: scope.runMessages,
      ...(scope.output === undefined ? {} : { output: scope.output }),
    };
  }

  /**
   * The run lost its thread's lease: it stops here and commits nothing (no run-end hooks, no run-end commit; only
   * the results of calls that finished go to the ledger), so the store keeps it `running` for the process that
   * holds the thread now. Its `run-end` says `running`, with the
   * lease loss as the termination.
   */
  private async leftToOthers(reason: unknown = this.scope.signal.reason): Promise<RunResult> {
    const { scope } = this;
    const termination: TerminationReason = { type: 'error', error: toErrorInfo(reason) };
    if (scope.durable) await this.checkpointer.saveFinished();
    this.toolCalls.dispose();
    if (this.deadline !== undefined) clearTimeout(this.deadline);
    const openTickets = this.checkpointer.currentTickets();
    const ended = {
      status: 'running' as const,
      termination,
      finalText: scope.finalText,
      steps: scope.progress.step,
      usage: scope.progress.usage,
      openTickets,
    };
    scope.instrumentation?.runEnded(ended);
    if (scope.listening) scope.emit({ type: 'run-end', ...ended, timestamp: Date.now() });
    return { identity: scope.identity, ...ended, messages: scope.runMessages };
  }
}
