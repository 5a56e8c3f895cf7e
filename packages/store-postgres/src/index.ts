export type { CallBatching } from './call-batcher.js';
export { latestSchemaVersion } from './postgres-migrations.js';
export {
  type PostgresPool,
  type PostgresPoolClient,
  type PostgresQueryConfig,
  PostgresStore,
  type PostgresStoreConnectionOptions,
  type PostgresStoreKyselyOptions,
  type PostgresStoreOptions,
  type PostgresStorePoolOptions,
} from './postgres-store.js';
