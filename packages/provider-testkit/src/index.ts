export {
  assertStreamInvariants,
  type CollectedStream,
  collectStream,
  type StreamSummary,
  type SummarizedReasoning,
  type SummarizedToolCall,
  summarizeParts,
} from './collect-stream.js';
export {
  formatServerSentEvent,
  type ProviderWire,
  reportableUsage,
  type ScriptedError,
  type ScriptedEvent,
  type ScriptedResponse,
  type ScriptedStream,
  scriptedStopReason,
  type UnreportedUsageField,
  type WireCapabilities,
} from './provider-wire.js';
export {
  type ConformanceModelSettings,
  type ProviderConformanceOptions,
  runProviderConformance,
} from './run-provider-conformance.js';
export {
  type HttpBodyStep,
  type HttpResponseScript,
  type RecordedRequest,
  type ResponseOutcome,
  type ScriptedHandler,
  ScriptedServer,
} from './scripted-server.js';
export {
  type StructuredOutputConformance,
  structuredOutputSchema,
} from './structured-output-specs.js';
export { useScriptedServer } from './use-scripted-server.js';
