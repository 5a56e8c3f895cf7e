export { AgentWorker, type AgentWorkerOptions, type StopWorkerOptions } from './agent-worker.js';
export {
  type FleetCancel,
  type FleetCancelOptions,
  FleetClient,
  type FleetClientOptions,
  type FleetDecision,
  type FleetSendOptions,
  type FleetSubmission,
} from './fleet-client.js';
export {
  LocalDispatchBackend,
  type LocalDispatchBackendOptions,
  LocalDispatcher,
  type LocalDispatcherOptions,
} from './local-dispatcher.js';
export type { WorkerLogEntry, WorkerLogEvent, WorkerLogLevel } from './worker-log.js';
