import { createRequire } from 'node:module';
import {
  type Instrumentation,
  type LeaseRejectionFact,
  LunationError,
  type RunInstrumentation,
  type RunStartFact,
} from '@lunation/contract';
import {
  type Attributes,
  context,
  type Link,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import { GEN_AI, LUNATION } from './attribute-names.js';
import {
  type CheckpointRecording,
  errorCode,
  RunTracer,
  type RunTraceSettings,
  type ToolSpanRecording,
} from './run-tracer.js';
import { SpanNames } from './span-names.js';
import { fromTraceCarrier } from './trace-carrier.js';

/** The name (instrumentation scope) of the tracer `@lunation/otel` creates its spans with. */
export const TRACER_NAME = '@lunation/otel';

/** The version of `@lunation/otel`, the tracer's scope version (read from its package.json, beside `src` and `dist`). */
const TRACER_VERSION = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

/** Options of {@link openTelemetryInstrumentation}. */
export interface OpenTelemetryInstrumentationOptions {
  /** Where the tracer comes from. @default the global tracer provider (`trace.getTracerProvider()`) */
  tracerProvider?: TracerProvider;
  /**
   * Record message contents: the model's input and output messages, tool arguments and results, the final
   * answer (`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.tool.call.arguments`, ...). They may
   * hold personal data. @default false
   */
  captureMessageContent?: boolean;
  /**
   * How checkpoint commits (C0, C1, C2, run-end) are recorded. Every mode puts `lunation.run.checkpoints` (how many
   * commits) and `lunation.run.checkpoint_duration_ms` (their summed latency) on the run's span, and a failed
   * commit is always recorded.
   * - `'summary'`: nothing per commit, but a failed one is a `lunation.checkpoint` event of the run's span (a fenced
   *   one also a `lunation.lease.fenced` event). The cheapest.
   * - `'events'`: every commit is a `lunation.checkpoint` event of the run's span, with its kind, contents and
   *   `lunation.checkpoint.duration_ms`.
   * - `'spans'`: every commit is a `lunation.checkpoint {C0|C1|C2|run-end}` span of its own (the commit's latency
   *   as the span's duration, a fenced commit a failed span): the store's latency on a timeline, at about the
   *   cost of the commit itself on a fast store.
   * @default 'summary'
   */
  checkpoints?: CheckpointRecording;
  /**
   * Which tool executions get an `execute_tool` span.
   * - `'all'`: every one, as the GenAI conventions recommend.
   * - `{ minDurationMs }`: only the notable ones: a tool call that did not succeed (failed, abandoned, denied),
   *   returned an error result, suspended for a decision, re-ran after a crash, or took at least `minDurationMs`.
   *   Its span is made when it ends, with the times it started and ended. A fast successful call gets no span and
   *   is counted on the run's span (`lunation.run.tool_spans_skipped`); a child run it starts nests under the
   *   run's span. A step then costs one SDK span instead of two: an option for a CPU budget that sampling does
   *   not fit, not the default.
   * @default 'all'
   */
  toolSpans?: ToolSpanRecording;
}

/**
 * Traces runs with OpenTelemetry: an `invoke_agent {agent}` span per run (or continuation), under it
 * `chat {model}` and `execute_tool {tool}` spans, the run's checkpoint commits (see
 * {@link OpenTelemetryInstrumentationOptions.checkpoints}), and events for ledger hits and re-runs, lease
 * acquire / renew / loss / fencing, suspensions and resumes. A delegated child
 * run's span is a child of its parent's `execute_tool` span; a run that continues a suspended one (in any
 * process) links to the suspended run's span.
 */
export class OpenTelemetryInstrumentation implements Instrumentation {
  private readonly settings: RunTraceSettings;
  private readonly tracer: Tracer;

  constructor(options: OpenTelemetryInstrumentationOptions = {}) {
    const provider = options.tracerProvider ?? trace.getTracerProvider();
    this.tracer = provider.getTracer(TRACER_NAME, TRACER_VERSION);
    this.settings = {
      tracer: this.tracer,
      captureMessageContent: options.captureMessageContent === true,
      checkpoints: checkpointRecording(options.checkpoints),
      toolSpans: toolSpanRecording(options.toolSpans),
      names: new SpanNames(),
      runs: new Map<string, RunTracer>(),
    };
  }

  runStarted(fact: RunStartFact): RunInstrumentation {
    const { identity } = fact;
    // Only what a sampler may decide on (the operation, provider, agent and model): the SDK validates and copies
    // what `startSpan` gets twice, and a run its sampler drops needs nothing else. The run's other attributes come
    // with its end (`RunTracer.runEnded`), when an exporter first sees the span.
    const attributes: Attributes = {
      [GEN_AI.operationName]: 'invoke_agent',
      [GEN_AI.providerName]: fact.provider,
      [GEN_AI.agentId]: identity.agentId,
      [GEN_AI.agentName]: identity.agentId,
      [GEN_AI.requestModel]: fact.model,
    };
    let links: Link[] | undefined;
    const suspended = fact.suspendedBy === undefined ? undefined : fromTraceCarrier(fact.suspendedBy);
    if (suspended !== undefined)
      links = [{ context: suspended, attributes: { [LUNATION.linkType]: 'resumes' } }];
    const parent = this.parentOf(fact);
    const span = this.tracer.startSpan(
      `invoke_agent ${identity.agentId}`,
      links === undefined
        ? { kind: SpanKind.INTERNAL, attributes }
        : { kind: SpanKind.INTERNAL, attributes, links },
      parent,
    );
    if (fact.lease !== undefined && span.isRecording()) {
      span.addEvent(LUNATION.leaseAcquireEvent, {
        [LUNATION.leaseToken]: fact.lease.token,
        [LUNATION.leaseTakeover]: fact.lease.takeover,
      });
    }
    return new RunTracer(span, parent, fact, this.settings);
  }

  leaseRejected(fact: LeaseRejectionFact): void {
    const span = this.tracer.startSpan(
      LUNATION.leaseRejectedSpan,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [LUNATION.threadId]: fact.threadId,
          [GEN_AI.conversationId]: fact.threadId,
          [LUNATION.runId]: fact.runId,
          [GEN_AI.errorType]: errorCode(fact.error) ?? 'error',
        },
      },
      context.active(),
    );
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: fact.error instanceof Error ? fact.error.message : String(fact.error),
    });
    span.end();
  }

  /**
   * A child run's parent is the `execute_tool` span of the call that started it, or the parent run's span when
   * that call has none (not recorded yet, or its run was not sampled), when the parent run is in this process.
   */
  private parentOf(fact: RunStartFact) {
    const { parentRunId, parentToolCallId } = fact.identity;
    const active = context.active();
    if (parentRunId === undefined || parentToolCallId === undefined) return active;
    const parentRun = this.settings.runs.get(parentRunId);
    if (parentRun === undefined) return active;
    const toolSpan = parentRun.toolSpan(parentToolCallId);
    return toolSpan === undefined ? parentRun.context : trace.setSpan(active, toolSpan);
  }
}

const CHECKPOINT_RECORDINGS: readonly CheckpointRecording[] = ['summary', 'events', 'spans'];

/** The `checkpoints` option, checked (it may come from JavaScript or a config file). */
function checkpointRecording(value: CheckpointRecording | undefined): CheckpointRecording {
  if (value === undefined) return 'summary';
  if (CHECKPOINT_RECORDINGS.includes(value)) return value;
  throw new LunationError(
    'invalid-argument',
    `openTelemetryInstrumentation: checkpoints must be 'summary', 'events' or 'spans', not ${JSON.stringify(value)}`,
  );
}

/** The `toolSpans` option, checked. */
function toolSpanRecording(value: ToolSpanRecording | undefined): ToolSpanRecording {
  if (value === undefined || value === 'all') return 'all';
  const minDurationMs = typeof value === 'object' && value !== null ? value.minDurationMs : undefined;
  if (typeof minDurationMs === 'number' && Number.isFinite(minDurationMs) && minDurationMs >= 0)
    return { minDurationMs };
  throw new LunationError(
    'invalid-argument',
    `openTelemetryInstrumentation: toolSpans must be 'all' or { minDurationMs } with a duration of 0 or more milliseconds, not ${JSON.stringify(value)}`,
  );
}

/** An {@link OpenTelemetryInstrumentation}, to give an `AgentRuntime` as its `instrumentation`. */
export function openTelemetryInstrumentation(
  options?: OpenTelemetryInstrumentationOptions,
): OpenTelemetryInstrumentation {
  return new OpenTelemetryInstrumentation(options);
}
