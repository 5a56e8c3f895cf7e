export {
  type SqliteClient,
  type SqliteStatement,
  SqliteStore,
  type SqliteStoreClientOptions,
  type SqliteStoreKyselyOptions,
  type SqliteStoreOptions,
  type SqliteStorePathOptions,
} from './sqlite-store.js';
