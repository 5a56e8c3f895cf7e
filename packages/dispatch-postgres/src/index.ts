export { latestSchemaVersion } from './dispatch-migrations.js';
export type {
  PostgresDispatcherClient,
  PostgresDispatcherPool,
  PostgresNotification,
  PostgresQueryResult,
} from './postgres-connection.js';
export { PostgresDispatcher } from './postgres-dispatcher.js';
export type {
  PostgresDispatcherCommonOptions,
  PostgresDispatcherConnectionOptions,
  PostgresDispatcherOptions,
  PostgresDispatcherPoolOptions,
} from './postgres-dispatcher-options.js';
