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
  type SuspensionTicket,
  type ToolCallFact,
  type ToolCallOutcome,
  type TraceCarrier,
} from '@lunation/contract';
import {
  type Attributes,
  type Context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { finishReason, GEN_AI, LUNATION } from './attribute-names.js';
import { genAIMessages, systemInstructions } from './message-content.js';
import { toTraceCarrier } from './trace-carrier.js';

/** What every span of one run shares. */
export interface RunTraceSettings {
  readonly tracer: Tracer;
  readonly captureMessageContent: boolean;
  /** Checkpoint commits as spans of their own, instead of events of the run's span. */
  readonly checkpointSpans: boolean;
  /** The live runs of this instrumentation by run id, for the child runs their tool calls start. */
  readonly runs: Map<string, RunTracer>;
}

/**
 * One run as OpenTelemetry spans: its `invoke_agent` span, and under it a `chat` span per model call, an
 * `execute_tool` span per tool execution and a `lunation.checkpoint` span per commit; ledger hits, leases,
 * suspensions and resumes are events of the run's span.
 */
export class RunTracer implements RunInstrumentation {
  /** The run's span as parent of its operations. */
  readonly context: Context;
  /** The live execute_tool spans by tool call id (a delegated child run nests under its call's span). */
  private readonly toolSpans = new Map<string, Span>();
  /** False for a run its sampler dropped: its operations are then not traced either (nothing is built). */
  private readonly recording: boolean;

  constructor(
    readonly span: Span,
    parent: Context,
    readonly threadId: string,
    readonly runId: string,
    private readonly settings: RunTraceSettings,
  ) {
    this.context = trace.setSpan(parent, span);
    this.recording = span.isRecording();
    settings.runs.set(runId, this);
  }

  /** The live span of one of this run's tool calls. */
  toolSpan(toolCallId: string): Span | undefined {
    return this.toolSpans.get(toolCallId);
  }

  modelCallStarted(call: ModelCallFact): InstrumentedOperation<ModelCallOutcome> | undefined {
    if (!this.recording) return undefined;
    const { request } = call;
    const attributes: Attributes = {
      [GEN_AI.operationName]: 'chat',
      [GEN_AI.providerName]: call.provider,
      [GEN_AI.requestModel]: call.model,
      [GEN_AI.conversationId]: this.threadId,
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
      `chat ${call.model}`,
      { kind: SpanKind.CLIENT, attributes },
      this.context,
    );
    return new ModelCallSpan(span, call.provider, this.settings.captureMessageContent);
  }

  toolCallStarted(call: ToolCallFact): InstrumentedOperation<ToolCallOutcome> | undefined {
    if (!this.recording) return undefined;
    const attributes: Attributes = {
      [GEN_AI.operationName]: 'execute_tool',
      [GEN_AI.toolName]: call.toolName,
      [GEN_AI.toolCallId]: call.toolCallId,
      [GEN_AI.toolType]: 'function',
      [GEN_AI.conversationId]: this.threadId,
      [LUNATION.idempotencyKey]: call.idempotencyKey,
    };
    // Each attribute costs the SDK a validation pass: the common first attempt carries none of these.
    if (call.rerun) attributes[LUNATION.rerun] = true;
    if (call.attempt > 1) attributes[LUNATION.attempt] = call.attempt;
    if (this.settings.captureMessageContent) attributes[GEN_AI.toolCallArguments] = call.arguments;
    const span = this.settings.tracer.startSpan(
      `execute_tool ${call.toolName}`,
      { kind: SpanKind.INTERNAL, attributes },
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
    return new ToolCallSpan(span, call.toolCallId, this.toolSpans, this.settings.captureMessageContent);
  }

  checkpointStarted(kind: CheckpointKind): InstrumentedOperation<CheckpointOutcome> | undefined {
    if (!this.recording) return undefined;
    if (!this.settings.checkpointSpans) return new CheckpointEvent(this.span, kind);
    const span = this.settings.tracer.startSpan(
      `${LUNATION.checkpointSpan} ${kind}`,
      { kind: SpanKind.INTERNAL, attributes: { [LUNATION.checkpointKind]: kind } },
      this.context,
    );
    return new CheckpointSpan(span);
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
    span.setAttributes({
      [LUNATION.status]: fact.status,
      [LUNATION.termination]: termination.type,
      [LUNATION.steps]: fact.steps,
      [GEN_AI.usageInputTokens]: usage.inputTokens,
      [GEN_AI.usageOutputTokens]: usage.outputTokens,
    });
    if (this.settings.captureMessageContent && fact.finalText !== '') {
      span.setAttribute(
        GEN_AI.outputMessages,
        JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: fact.finalText }] }]),
      );
    }
    if (termination.type === 'error') {
      span.setAttribute(GEN_AI.errorType, termination.error.code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: termination.error.message });
    }
    span.end();
  }
}

class ModelCallSpan implements InstrumentedOperation<ModelCallOutcome> {
  constructor(
    private readonly span: Span,
    private readonly provider: string,
    private readonly captureMessageContent: boolean,
  ) {}

  end(outcome: ModelCallOutcome): void {
    const { span } = this;
    if (!span.isRecording()) return; // not sampled: nothing to add
    if (outcome.error !== undefined) {
      failed(span, outcome.error);
      span.end();
      return;
    }
    const attributes: Attributes = {};
    if (outcome.stopReason !== undefined)
      attributes[GEN_AI.responseFinishReasons] = [finishReason(outcome.stopReason)];
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
      const reported = message.providerMetadata?.[this.provider]?.model;
      if (typeof reported === 'string') attributes[GEN_AI.responseModel] = reported;
      if (this.captureMessageContent) attributes[GEN_AI.outputMessages] = genAIMessages([message]);
    }
    span.setAttributes(attributes);
    span.end();
  }
}

class ToolCallSpan implements InstrumentedOperation<ToolCallOutcome> {
  constructor(
    private readonly span: Span,
    private readonly toolCallId: string,
    private readonly open: Map<string, Span>,
    private readonly captureMessageContent: boolean,
  ) {}

  end(outcome: ToolCallOutcome): void {
    const { span } = this;
    this.open.delete(this.toolCallId);
    if (!span.isRecording()) return; // not sampled: nothing to add
    span.setAttribute(LUNATION.toolStatus, outcome.status);
    const result = outcome.result;
    if (result !== undefined) {
      if (this.captureMessageContent) span.setAttribute(GEN_AI.toolCallResult, JSON.stringify(result));
      if (result.status === 'error') {
        span.setAttribute(GEN_AI.errorType, outcome.status === 'abandoned' ? 'abandoned' : 'tool_error');
        span.setStatus({ code: SpanStatusCode.ERROR, message: result.message ?? 'the tool failed' });
      }
    }
    span.end();
  }
}

class CheckpointSpan implements InstrumentedOperation<CheckpointOutcome> {
  constructor(private readonly span: Span) {}

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
      failed(span, outcome.error);
    }
    span.end();
  }
}

/**
 * A checkpoint commit as an event of the run's span (the default: an event costs a fraction of a span), stamped
 * when the commit ended and carrying its duration.
 */
class CheckpointEvent implements InstrumentedOperation<CheckpointOutcome> {
  private readonly startedAt = performance.now();

  constructor(
    private readonly span: Span,
    private readonly kind: CheckpointKind,
  ) {}

  end(outcome: CheckpointOutcome): void {
    const { span } = this;
    const attributes: Attributes = {
      [LUNATION.checkpointKind]: this.kind,
      [LUNATION.checkpointMessages]: outcome.messages,
      [LUNATION.checkpointLedgerEntries]: outcome.ledgerEntries,
      [LUNATION.checkpointRunRecord]: outcome.runRecord,
      [LUNATION.checkpointDuration]: performance.now() - this.startedAt,
    };
    if (outcome.error !== undefined) {
      attributes[GEN_AI.errorType] = errorCode(outcome.error) ?? 'error';
      if (LunationError.hasCode(outcome.error, 'stale-lease')) attributes[LUNATION.leaseFenced] = true;
    }
    span.addEvent(LUNATION.checkpointSpan, attributes);
    if (attributes[LUNATION.leaseFenced] === true) span.addEvent(LUNATION.leaseFencedEvent);
  }
}

/** Marks a span failed with an error: its code as `error.type`, the error recorded as an exception. */
function failed(span: Span, error: unknown): void {
  span.setAttribute(GEN_AI.errorType, errorCode(error) ?? 'error');
  if (error instanceof Error) span.recordException(error);
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: error instanceof Error ? error.message : String(error),
  });
}

/** A LunationError's code, or undefined. */
export function errorCode(error: unknown): string | undefined {
  return LunationError.isInstance(error) ? error.code : undefined;
}
