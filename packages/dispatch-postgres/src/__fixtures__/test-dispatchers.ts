import type pg from 'pg';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { PostgresDispatcher } from '../postgres-dispatcher.js';
import type { PostgresDispatcherCommonOptions } from '../postgres-dispatcher-options.js';
import {
  dropSchema,
  postgresUrl,
  sharedTestPostgres,
  testSettings,
  uniqueSchema,
} from './postgres-test-server.js';

/**
 * Registers the hooks of a test file whose tests open dispatchers: `open` gives one on a fresh schema (or on
 * `schema`), closed after the test, and the schemas are dropped. `admin()` is a pool for inspection; it fails the
 * test (never skips it) when PostgreSQL is down.
 */
export function testDispatchers(): {
  admin(): pg.Pool;
  open(options?: PostgresDispatcherCommonOptions): Promise<PostgresDispatcher>;
  /** Runs `close` after the test (before schemas are dropped). */
  cleanup(close: () => Promise<void>): void;
} {
  const server = sharedTestPostgres();
  const opened: PostgresDispatcher[] = [];
  const schemas = new Set<string>();
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(() => server.connect());
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    for (const dispatcher of opened.splice(0)) await dispatcher.close();
    for (const schema of schemas) await dropSchema(server.connected(), schema);
    schemas.clear();
  });
  afterAll(() => server.end());
  return {
    admin: () => server.connected(),
    async open(options = {}) {
      server.connected();
      const schema = options.schema ?? uniqueSchema();
      schemas.add(schema);
      const dispatcher = await PostgresDispatcher.open({
        ...testSettings,
        ...options,
        connectionString: postgresUrl,
        schema,
      });
      opened.push(dispatcher);
      return dispatcher;
    },
    cleanup(close) {
      cleanups.push(close);
    },
  };
}
