// Helpers for PostgreSQL adapters (`@lunation/contract/postgres-utils`): one migration runner and one error
// mapping for every adapter on PostgreSQL, over a query function the adapter gives (no driver is imported
// here). Not part of the spec.

export { type PostgresErrorContext, postgresErrorCode, toPostgresError } from './postgres-errors.js';
export {
  migratePostgresSchema,
  type PostgresMigrationOptions,
  postgresSchemaVersion,
} from './postgres-migrations.js';
export { type PostgresQuery, quoteIdentifier, serverNowMs } from './postgres-query.js';
