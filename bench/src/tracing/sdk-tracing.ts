/**
 * Tracing as the bench measures it: `@lunation/otel`'s instrumentation on a real SDK tracer (`TracerProvider` of
 * `@opentelemetry/sdk-trace`, a `BatchSpanProcessor` with its default settings, as in production) whose exporter
 * counts the spans it is given and drops them. So the figures hold Lunation's and the SDK's cost per span, and not
 * an exporter's (serialisation, network).
 */
import type { Instrumentation } from '@lunation/contract';
import { openTelemetryInstrumentation } from '@lunation/otel';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type SpanExporter,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';

/** Drops every span (counting them): what tracing costs the process, not the backend. */
export class DroppingExporter implements SpanExporter {
  spans = 0;
  export(spans: ReadableSpan[], resultCallback: (result: { code: number }) => void): void {
    this.spans += spans.length;
    resultCallback({ code: 0 });
  }
  async shutdown(): Promise<void> {}
  async forceFlush(): Promise<void> {}
}

/**
 * `every`: every run traced (`AlwaysOn`, the SDK's default); `sampled`: one run in ten, each completely; `lean`:
 * every run, with `toolSpans: { minDurationMs: 5 }` (W1's tool takes microseconds and succeeds: no tool span).
 */
export type TracingSampling = 'every' | 'sampled' | 'lean';

export interface BenchTracing {
  tracerProvider: TracerProvider;
  exporter: DroppingExporter;
  instrumentation: Instrumentation;
  /** Flushes the batch, then throws unless `expected` spans were exported (or, when sampled, any). */
  check(expected: number): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * A real SDK tracer and `@lunation/otel` on it. `instrument` builds the instrumentation (default: the workspace's
 * `openTelemetryInstrumentation`; the callgrind child can pass another build's).
 */
export function benchTracing(
  sampling: TracingSampling,
  instrument: typeof openTelemetryInstrumentation = openTelemetryInstrumentation,
): BenchTracing {
  const exporter = new DroppingExporter();
  const tracerProvider = new TracerProvider({
    ...(sampling === 'sampled'
      ? { sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.1) }) }
      : {}),
    spanProcessors: [new BatchSpanProcessor({ exporter })],
  });
  return {
    tracerProvider,
    exporter,
    instrumentation: instrument(
      sampling === 'lean' ? { tracerProvider, toolSpans: { minDurationMs: 5 } } : { tracerProvider },
    ),
    async check(expected) {
      await tracerProvider.forceFlush();
      if (sampling === 'every' && exporter.spans !== expected)
        throw new Error(`Every run traced: expected ${expected} spans, the exporter got ${exporter.spans}`);
      // A tool call that happened to take 5 ms (a GC pause, a descheduled process) gets its span.
      if (sampling === 'lean' && exporter.spans < expected)
        throw new Error(
          `Lean tracing: expected at least ${expected} spans, the exporter got ${exporter.spans}`,
        );
      if (sampling === 'sampled' && exporter.spans === 0)
        throw new Error('Tracing was sampled but no span was exported');
    },
    shutdown: () => tracerProvider.shutdown(),
  };
}

/**
 * Spans of one W1 run of `steps` steps: `invoke_agent`, a `chat` per step and an `execute_tool` per tool step (none
 * when `lean`).
 */
export function spansPerRun(steps: number, sampling: TracingSampling = 'every'): number {
  return 1 + steps + (sampling === 'lean' ? 0 : steps - 1);
}
