import {
  type CheckpointKind,
  type CheckpointOutcome,
  type InstrumentedOperation,
  type LeaseFact,
  type LedgerHitFact,
  LunationError,
  type ModelCallFact,
  type ModelCallOutcome,
  type ResumeDecision,
  type RunEndFact,
  type RunInstrumentation,
  type RunStartFact,
  type SuspensionTicket,
  type ToolCallFact,
  type ToolCallOutcome,
  type ToolDescriptor,
  type TraceCarrier,
} from '@lunation/contract';
import {
  type Attributes,
  type Context,
  type Exception,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { finishReasons, GEN_AI, LUNATION } from './attribute-names.js';
import { genAIMessages, systemInstructions } from './message-content.js';
import type { SpanNames } from './span-names.js';
import { DeferredToolCallSpan, ToolCallSpan, type ToolSpanHost } from './tool-call-span.js';
import { toTraceCarrier } from './trace-carrier.js';

/**
 * How checkpoint commits are recorded: a count and total latency on the run's span (`summary`), an event of the
 * run's span per commit (`events`), or a span per commit (`spans`). A failed commit is an event in the first two.
 */
export type CheckpointRecording = 'summary' | 'events' | 'spans';

/**
 * Which tool executions get an `execute_tool` span: `'all'`, or only the notable ones (`{ minDurationMs }`: those
 * that did not succeed, returned an error result, suspended, re-ran or took at least `minDurationMs`).
 */
export type ToolSpanRecording = 'all' | { readonly minDurationMs: number };

/** What every span of one run shares. */
export interface RunTraceSettings {
  readonly tracer: Tracer;
  readonly captureMessageContent: boolean;
  readonly checkpoints: CheckpointRecording;
  readonly toolSpans: ToolSpanRecording;
  /** Span names and tool descriptions, made once for every run. */
  readonly names: SpanNames;
  /** The live runs of this instrumentation by run id, for the child runs their tool calls start. */
  readonly runs: Map<string, RunTracer>;
}

/**
 * One run as OpenTelemetry spans: its `invoke_agent` span, and under it a `chat` span per model call and an
 * `execute_tool` span per tool execution; checkpoint commits, ledger hits, leases, suspensions and resumes are
 * attributes and events of the run's span (or, for commits, spans of their own when asked for).
 *
 * What a span costs is mostly the SDK's work per attribute: it validates and copies every one, twice for those
 * given to `startSpan` (once before sampling, once after). So `chat` and `execute_tool` spans start with the
 * attributes a sampler may look at (the operation, provider and model, the tool's name) and get the rest in one
 * `setAttributes` when they end, which is also when an exporter first sees them.
 */
export class RunTracer implements RunInstrumentation, ToolSpanHost {
  /** The run's span as parent of its operations. */
  readonly context: Context;
  /** The live execute_tool spans by tool call id (a delegated child run nests under its call's span). */
  private readonly toolSpans = new Map<string, Span>();
  /** False for a run its sampler dropped: its operations are then not traced either (nothing is built). */
  private readonly recording: boolean;
  /** The descriptions of the tools the run's latest model call offered, by name (`gen_ai.tool.description`). */
  private toolDescriptions: ReadonlyMap<string, string> | undefined;
  private describedTools: readonly ToolDescriptor[] | undefined;
  /** Tool executions that got no span (`toolSpans: { minDurationMs }`). */
  private skippedToolSpans = 0;
  /** The run's checkpoint commits so far, and their summed latency in milliseconds. */
  private checkpointCount = 0;
  private checkpointMs = 0;

  readonly threadId: string;
  readonly runId: string;
  readonly captureMessageContent: boolean;

  constructor(
    readonly span: Span,
    parent: Context,
    /** What the run started with: its attributes besides the sampler's are set when it ends. */
    private readonly start: RunStartFact,
    private readonly settings: RunTraceSettings,
  ) {
    this.threadId = start.identity.threadId;
    this.runId = start.identity.runId;
    this.context = trace.setSpan(parent, span);
    this.recording = span.isRecording();
    this.captureMessageContent = settings.captureMessageContent;
    settings.runs.set(this.runId, this);
  }

  /** The live span of one of this run's tool calls. */
  toolSpan(toolCallId: string): Span | undefined {
    return this.toolSpans.get(toolCallId);
  }

  modelCallStarted(call: ModelCallFact): InstrumentedOperation<ModelCallOutcome> | undefined {
    if (!this.recording) return undefined;
    const { request } = call;
    const { names } = this.settings;
    if (request.tools !== this.describedTools) {
      this.describedTools = request.tools;
      this.toolDescriptions = names.toolDescriptions(request.tools);
    }
    const attributes: Attributes = {
      [GEN_AI.operationName]: 'chat',
      [GEN_AI.providerName]: call.provider,
      [GEN_AI.requestModel]: call.model,
    };
    const overrides = request.overrides;
    if (overrides !== undefined) {
      if (overrides.maxTokens !== undefined) attributes[GEN_AI.requestMaxTokens] = overrides.maxTokens;
      if (overrides.temperature !== undefined) attributes[GEN_AI.requestTemperature] = overrides.temperature;
      if (overrides.topP !== undefined) attributes[GEN_AI.requestTopP] = overrides.topP;
      if (overrides.stopSequences !== undefined)
        attributes[GEN_AI.requestStopSequences] = overrides.stopSequences;
    }
    if (this.settings.captureMessageContent) {
      attributes[GEN_AI.inputMessages] = genAIMessages(request.messages);
      const instructions = systemInstructions(request.messages);
      if (instructions !== undefined) attributes[GEN_AI.systemInstructions] = instructions;
    }
    const span = this.settings.tracer.startSpan(
      names.chat(call.model),
      { kind: SpanKind.CLIENT, attributes },
      this.context,
    );
    return new ModelCallSpan(span, call.provider, this.threadId, this.settings.captureMessageContent);
  }

  toolCallStarted(call: ToolCallFact): InstrumentedOperation<ToolCallOutcome> | undefined {
    if (!this.recording) return undefined;
    const description = this.toolDescriptions?.get(call.toolName);
    const { toolSpans } = this.settings;
    if (toolSpans !== 'all' && !call.rerun)
      return new DeferredToolCallSpan(this, call, description, toolSpans.minDurationMs);
    return new ToolCallSpan(this, this.startToolSpan(call), call, description);
  }

  startToolSpan(call: ToolCallFact, startTime?: number): Span {
    const attributes: Attributes = {
      [GEN_AI.operationName]: 'execute_tool',
      [GEN_AI.toolName]: call.toolName,
    };
    if (this.captureMessageContent) attributes[GEN_AI.toolCallArguments] = call.arguments;
    const span = this.settings.tracer.startSpan(
      this.settings.names.tool(call.toolName),
      startTime === undefined
        ? { kind: SpanKind.INTERNAL, attributes }
        : { kind: SpanKind.INTERNAL, attributes, startTime },
      this.context,
    );
    if (call.rerun) {
      span.addEvent(LUNATION.ledgerRerunEvent, {
        [GEN_AI.toolCallId]: call.toolCallId,
        [LUNATION.idempotencyKey]: call.idempotencyKey,
        [LUNATION.attempt]: call.attempt,
      });
    }
    this.toolSpans.set(call.toolCallId, span);
    return span;
  }

  toolSpanEnded(toolCallId: string, recorded: boolean): void {
    if (recorded) this.toolSpans.delete(toolCallId);
    else this.skippedToolSpans++;
  }

  checkpointStarted(kind: CheckpointKind): InstrumentedOperation<CheckpointOutcome> | undefined {
    if (!this.recording) return undefined;
    if (this.settings.checkpoints !== 'spans') return new CheckpointTimer(this, kind);
    const span = this.settings.tracer.startSpan(
      `${LUNATION.checkpointSpan} ${kind}`,
      { kind: SpanKind.INTERNAL, attributes: { [LUNATION.checkpointKind]: kind } },
      this.context,
    );
    return new CheckpointSpan(this, span);
  }

  /** Counts a checkpoint commit of `ms` milliseconds for the run's summary. */
  countCheckpoint(ms: number): void {
    this.checkpointCount++;
    this.checkpointMs += ms;
  }

  /**
   * A checkpoint commit ended after `ms` milliseconds: counted, and an event of the run's span when every commit
   * is one (`checkpoints: 'events'`) or when it failed (a fenced commit also gets a `lunation.lease.fenced` event).
   */
  checkpointEnded(kind: CheckpointKind, outcome: CheckpointOutcome, ms: number): void {
    this.countCheckpoint(ms);
    const { error } = outcome;
    if (error === undefined && this.settings.checkpoints === 'summary') return;
    const attributes: Attributes = {
      [LUNATION.checkpointKind]: kind,
      [LUNATION.checkpointMessages]: outcome.messages,
      [LUNATION.checkpointLedgerEntries]: outcome.ledgerEntries,
      [LUNATION.checkpointRunRecord]: outcome.runRecord,
      [LUNATION.checkpointDuration]: ms,
    };
    const fenced = error !== undefined && LunationError.hasCode(error, 'stale-lease');
    if (error !== undefined) {
      attributes[GEN_AI.errorType] = errorCode(error) ?? 'error';
      if (fenced) attributes[LUNATION.leaseFenced] = true;
    }
    this.span.addEvent(LUNATION.checkpointSpan, attributes);
    if (fenced) this.span.addEvent(LUNATION.leaseFencedEvent);
  }

  ledgerHit(fact: LedgerHitFact): void {
    this.span.addEvent(LUNATION.ledgerHitEvent, {
      [GEN_AI.toolCallId]: fact.toolCallId,
      [GEN_AI.toolName]: fact.toolName,
      [LUNATION.source]: fact.source,
      [LUNATION.step]: fact.step,
    });
  }

  toolCallSuspended(ticket: SuspensionTicket): void {
    this.span.addEvent(LUNATION.suspendEvent, {
      [GEN_AI.toolCallId]: ticket.toolCallId,
      [GEN_AI.toolName]: ticket.toolName,
      [LUNATION.ticketId]: ticket.id,
      [LUNATION.ticketAction]: ticket.action,
    });
  }

  toolCallResumed(toolCallId: string, decision: ResumeDecision): void {
    this.span.addEvent(LUNATION.resumeEvent, {
      [GEN_AI.toolCallId]: toolCallId,
      [LUNATION.ticketId]: decision.ticketId,
      [LUNATION.decisionAction]: decision.action,
    });
  }

  lease(fact: LeaseFact): void {
    if (fact.type === 'renew') {
      this.span.addEvent(LUNATION.leaseRenewEvent, { [LUNATION.leaseToken]: fact.token });
      return;
    }
    const attributes: Attributes = { [LUNATION.leaseToken]: fact.token };
    const code = errorCode(fact.error);
    if (code !== undefined) attributes[GEN_AI.errorType] = code;
    this.span.addEvent(LUNATION.leaseLostEvent, attributes);
  }

  suspendContext(): TraceCarrier | undefined {
    return toTraceCarrier(this.span.spanContext());
  }

  runEnded(fact: RunEndFact): void {
    const { span } = this;
    if (this.settings.runs.get(this.runId) === this) this.settings.runs.delete(this.runId);
    if (!span.isRecording()) return; // not sampled: nothing to add
    const { termination, usage } = fact;
    const { identity } = this.start;
    const attributes: Attributes = {
      [GEN_AI.conversationId]: identity.threadId,
      [LUNATION.runId]: identity.runId,
      [LUNATION.runOrigin]: identity.origin,
      [LUNATION.resumed]: this.start.resumed,
      [LUNATION.status]: fact.status,
      [LUNATION.termination]: termination.type,
      [LUNATION.steps]: fact.steps,
      [GEN_AI.usageInputTokens]: usage.inputTokens,
      [GEN_AI.usageOutputTokens]: usage.outputTokens,
    };
    if (this.start.description !== undefined) attributes[GEN_AI.agentDescription] = this.start.description;
    if (identity.parentRunId !== undefined) attributes[LUNATION.parentRunId] = identity.parentRunId;
    if (this.settings.captureMessageContent && this.start.input.length > 0)
      attributes[GEN_AI.inputMessages] = genAIMessages(this.start.input);
    if (this.skippedToolSpans > 0) attributes[LUNATION.toolSpansSkipped] = this.skippedToolSpans;
    if (this.checkpointCount > 0) {
      attributes[LUNATION.checkpoints] = this.checkpointCount;
      attributes[LUNATION.checkpointsDuration] = this.checkpointMs;
    }
    span.setAttributes(attributes);
    if (this.settings.captureMessageContent && fact.finalText !== '') {
      span.setAttribute(
        GEN_AI.outputMessages,
        JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: fact.finalText }] }]),
      );
    }
    if (termination.type === 'error') {
      const { code, message } = termination.error;
      span.setAttribute(GEN_AI.errorType, code);
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: this.settings.captureMessageContent ? message : code,
      });
    }
    span.end();
  }
}

/** A model call's `chat` span; its attributes besides the sampler's come with its end. */
class ModelCallSpan implements InstrumentedOperation<ModelCallOutcome> {
  constructor(
    private readonly span: Span,
    private readonly provider: string,
    private readonly threadId: string,
    private readonly captureMessageContent: boolean,
  ) {}

  end(outcome: ModelCallOutcome): void {
    const { span } = this;
    if (!span.isRecording()) return; // not sampled: nothing to add
    const attributes: Attributes = { [GEN_AI.conversationId]: this.threadId };
    if (outcome.error !== undefined) {
      span.setAttributes(attributes);
      failed(span, outcome.error, this.captureMessageContent);
      span.end();
      return;
    }
    if (outcome.stopReason !== undefined)
      attributes[GEN_AI.responseFinishReasons] = finishReasons(outcome.stopReason) as string[];
    const usage = outcome.usage;
    if (usage !== undefined) {
      attributes[GEN_AI.usageInputTokens] = usage.inputTokens;
      attributes[GEN_AI.usageOutputTokens] = usage.outputTokens;
      if (usage.cacheReadTokens > 0) attributes[GEN_AI.usageCacheReadInputTokens] = usage.cacheReadTokens;
      if (usage.cacheWriteTokens > 0)
        attributes[GEN_AI.usageCacheCreationInputTokens] = usage.cacheWriteTokens;
    }
    const message = outcome.message;
    if (message !== undefined) {
      const metadata = message.providerMetadata?.[this.provider];
      const reported = metadata?.model;
      if (typeof reported === 'string') attributes[GEN_AI.responseModel] = reported;
      const responseId = metadata?.responseId;
      if (typeof responseId === 'string' && responseId !== '') attributes[GEN_AI.responseId] = responseId;
      if (this.captureMessageContent) attributes[GEN_AI.outputMessages] = genAIMessages([message]);
    }
    span.setAttributes(attributes);
    span.end();
  }
}

/** A checkpoint commit timed for the run's summary (and its event, when the run records one). */
class CheckpointTimer implements InstrumentedOperation<CheckpointOutcome> {
  private readonly startedAt = performance.now();

  constructor(
    private readonly run: RunTracer,
    private readonly kind: CheckpointKind,
  ) {}

  end(outcome: CheckpointOutcome): void {
    this.run.checkpointEnded(this.kind, outcome, performance.now() - this.startedAt);
  }
}

/** A checkpoint commit as a `lunation.checkpoint {kind}` span of its own (`checkpoints: 'spans'`). */
class CheckpointSpan implements InstrumentedOperation<CheckpointOutcome> {
  private readonly startedAt = performance.now();

  constructor(
    private readonly run: RunTracer,
    private readonly span: Span,
  ) {}

  end(outcome: CheckpointOutcome): void {
    const { span } = this;
    span.setAttributes({
      [LUNATION.checkpointMessages]: outcome.messages,
      [LUNATION.checkpointLedgerEntries]: outcome.ledgerEntries,
      [LUNATION.checkpointRunRecord]: outcome.runRecord,
    });
    if (outcome.error !== undefined) {
      if (LunationError.hasCode(outcome.error, 'stale-lease')) {
        span.setAttribute(LUNATION.leaseFenced, true);
        span.addEvent(LUNATION.leaseFencedEvent);
      }
      failed(span, outcome.error, true); // a store's error: ids, no message contents
    }
    span.end();
    this.run.countCheckpoint(performance.now() - this.startedAt);
  }
}

/**
 * Marks a span failed with an error: its code as `error.type`, the error recorded as an exception. An error's
 * message may quote content (a prompt, a tool's output): without `withText` the status message and the exception
 * event carry only the error's type.
 */
export function failed(span: Span, error: unknown, withText: boolean): void {
  const type = errorCode(error) ?? (error instanceof Error ? error.name : 'error');
  span.setAttribute(GEN_AI.errorType, errorCode(error) ?? 'error');
  if (withText) {
    if (error instanceof Error) span.recordException(error);
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: error instanceof Error ? error.message : String(error),
    });
    return;
  }
  if (error instanceof Error) span.recordException({ name: type } satisfies Exception);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

/** A LunationError's code, or undefined. */
export function errorCode(error: unknown): string | undefined {
  return LunationError.isInstance(error) ? error.code : undefined;
}
