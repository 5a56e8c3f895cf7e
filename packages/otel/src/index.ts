export { GEN_AI, LUNATION } from './attribute-names.js';
export { combineInstrumentation } from './combine-instrumentation.js';
export {
  type DepthSource,
  LunationMetrics,
  type LunationMetricsOptions,
  lunationMetrics,
  METER_NAME,
  METRICS,
  type WorkerLogFact,
} from './lunation-metrics.js';
export {
  OpenTelemetryInstrumentation,
  type OpenTelemetryInstrumentationOptions,
  openTelemetryInstrumentation,
  TRACER_NAME,
} from './open-telemetry-instrumentation.js';
export type { CheckpointRecording, ToolSpanRecording } from './run-tracer.js';
export { fromTraceCarrier, toTraceCarrier } from './trace-carrier.js';
