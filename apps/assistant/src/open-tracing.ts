import type { Instrumentation } from '@lunation/contract';
import { openTelemetryInstrumentation } from '@lunation/otel';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';

/** Where the assistant's traces go: printed to the console, or sent to an OTLP collector. */
export type TraceKind = 'console' | 'otlp';

/** The tracing of one assistant process: the runtime's instrumentation and how to flush it at exit. */
export interface Tracing {
  instrumentation: Instrumentation;
  /** Sends what is buffered and stops. */
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry tracing for the assistant. `console` prints each span as it ends (the SDK's console exporter);
 * `otlp` batches spans to an OTLP/HTTP collector configured by the standard variables
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`, ...; default
 * `http://localhost:4318/v1/traces`). The service is named by `OTEL_SERVICE_NAME` (default `lunation-assistant`).
 * Message contents are recorded only when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` is `true`.
 */
export function openTracing(kind: TraceKind, env: Record<string, string | undefined>): Tracing {
  const processor =
    kind === 'console'
      ? new SimpleSpanProcessor({ exporter: new ConsoleSpanExporter() })
      : new BatchSpanProcessor({ exporter: new OTLPTraceExporter() });
  const tracerProvider = new TracerProvider({
    resource: defaultResource().merge(
      resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'lunation-assistant' }),
    ),
    spanProcessors: [processor],
  });
  const captureMessageContent = env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT === 'true';
  return {
    instrumentation: openTelemetryInstrumentation({ tracerProvider, captureMessageContent }),
    shutdown: () => tracerProvider.shutdown(),
  };
}
