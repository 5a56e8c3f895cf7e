// `@lunation/store-testkit/postgres`: the PostgreSQL test-server fixture, for the tests of packages that
// need a real server (store-postgres, dispatch-postgres).
export {
  type PostgresTestServer,
  type PostgresTestServerOptions,
  postgresTestServer,
  type TestPostgresPool,
  type TestPostgresPoolClass,
} from './postgres-test-server.js';
