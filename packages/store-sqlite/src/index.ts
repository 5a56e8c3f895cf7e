export {
  type SqliteClient,
  type SqliteStatement,
  SqliteStore,
  type SqliteStoreClientOptions,
  type SqliteStoreOptions,
  type SqliteStorePathOptions,
} from './sqlite-store.js';
