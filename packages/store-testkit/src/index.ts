export {
  expectLunationError,
  makeAssistantMessage,
  makeBeginToolExecutionInput,
  makeRunRecord,
  makeToolExecution,
  makeToolMessage,
  makeToolResult,
  makeUserMessage,
  sleep,
  uniqueId,
} from './fixtures.js';
export { runStoreConformance, type StoreConformanceOptions } from './run-store-conformance.js';
