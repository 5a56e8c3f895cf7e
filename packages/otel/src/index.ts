export { GEN_AI, LUNATION } from './attribute-names.js';
export {
  OpenTelemetryInstrumentation,
  type OpenTelemetryInstrumentationOptions,
  openTelemetryInstrumentation,
  TRACER_NAME,
} from './open-telemetry-instrumentation.js';
export type { CheckpointRecording } from './run-tracer.js';
export { fromTraceCarrier, toTraceCarrier } from './trace-carrier.js';
