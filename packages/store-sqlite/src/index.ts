export type { SqliteClient, SqliteStatement } from './sqlite-client.js';
export {
  SqliteStore,
  type SqliteStoreClientOptions,
  type SqliteStoreCommonOptions,
  type SqliteStoreKyselyOptions,
  type SqliteStoreOptions,
  type SqliteStorePathOptions,
} from './sqlite-store.js';
