import type { InstrumentedOperation, ToolCallFact, ToolCallOutcome, ToolResult } from '@lunation/contract';
import { type Attributes, type Span, SpanStatusCode } from '@opentelemetry/api';
import { GEN_AI, LUNATION } from './attribute-names.js';

/** The run a tool call's span belongs to. */
export interface ToolSpanHost {
  readonly threadId: string;
  readonly captureMessageContent: boolean;
  /** Starts the call's `execute_tool` span, now or at `startTime` (a `performance.now()` reading). */
  startToolSpan(call: ToolCallFact, startTime?: number): Span;
  /** The call's span ended (or its call was not recorded). */
  toolSpanEnded(toolCallId: string, recorded: boolean): void;
}

/** A tool execution's `execute_tool` span; its attributes besides the sampler's come with its end. */
export class ToolCallSpan implements InstrumentedOperation<ToolCallOutcome> {
  constructor(
    private readonly host: ToolSpanHost,
    private readonly span: Span,
    private readonly call: ToolCallFact,
    private readonly description: string | undefined,
  ) {}

  /** Ends the span, now or at `endTime` (a `performance.now()` reading). */
  end(outcome: ToolCallOutcome, endTime?: number): void {
    const { span, call, host } = this;
    host.toolSpanEnded(call.toolCallId, true);
    if (!span.isRecording()) return; // not sampled: nothing to add
    const result = outcome.result;
    const attributes: Attributes = {
      [GEN_AI.toolCallId]: call.toolCallId,
      [GEN_AI.toolType]: isMcpResult(result) ? 'extension' : 'function',
      [GEN_AI.conversationId]: host.threadId,
      [LUNATION.idempotencyKey]: call.idempotencyKey,
      [LUNATION.toolStatus]: outcome.status,
    };
    // The common first attempt carries neither.
    if (call.rerun) attributes[LUNATION.rerun] = true;
    if (call.attempt > 1) attributes[LUNATION.attempt] = call.attempt;
    if (this.description !== undefined) attributes[GEN_AI.toolDescription] = this.description;
    if (result !== undefined) {
      if (host.captureMessageContent) attributes[GEN_AI.toolCallResult] = JSON.stringify(result);
      if (result.status === 'error') {
        const errorType = outcome.status === 'abandoned' ? 'abandoned' : 'tool_error';
        attributes[GEN_AI.errorType] = errorType;
        // The result's text is content (it may hold personal data): only with contents on.
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: host.captureMessageContent ? (result.message ?? errorType) : errorType,
        });
      }
    }
    span.setAttributes(attributes);
    span.end(endTime);
  }
}

/**
 * A tool execution whose span is decided when it ends (`toolSpans: { minDurationMs }`): one that did not succeed,
 * returned an error result, suspended or took at least `minDurationMs` gets its `execute_tool` span then, with the
 * times it started and ended; a fast successful one gets none (the run's span counts it).
 */
export class DeferredToolCallSpan implements InstrumentedOperation<ToolCallOutcome> {
  private readonly startedAt = performance.now();

  constructor(
    private readonly host: ToolSpanHost,
    private readonly call: ToolCallFact,
    private readonly description: string | undefined,
    private readonly minDurationMs: number,
  ) {}

  end(outcome: ToolCallOutcome): void {
    const endedAt = performance.now();
    const { host, call } = this;
    const notable =
      outcome.status !== 'succeeded' ||
      outcome.suspended === true ||
      outcome.result?.status === 'error' ||
      endedAt - this.startedAt >= this.minDurationMs;
    if (!notable) {
      host.toolSpanEnded(call.toolCallId, false);
      return;
    }
    const span = host.startToolSpan(call, this.startedAt);
    new ToolCallSpan(host, span, call, this.description).end(outcome, endedAt);
  }
}

/** A result of a tool of `@lunation/mcp` (it names the server and tool in `metadata.mcp`): an `extension` tool. */
function isMcpResult(result: ToolResult | undefined): boolean {
  const mcp = result?.metadata?.mcp;
  return typeof mcp === 'object' && mcp !== null && !Array.isArray(mcp);
}
