/** Opens a PostgresDispatcher on the test database: the conformance kit's worker processes load this module. */
import type { DispatchPolicy } from '@lunation/contract';
import { PostgresDispatcher } from '../postgres-dispatcher.js';
import { postgresUrl, testSettings } from './postgres-test-server.js';

/** What names a test's backend: its schema. */
export interface TestBackend {
  schema: string;
}

/** A dispatcher on the test database in `backend`'s schema, with `policy`. */
export function openDispatcher(backend: TestBackend, policy: DispatchPolicy): Promise<PostgresDispatcher> {
  return PostgresDispatcher.open({
    ...policy,
    ...testSettings,
    connectionString: postgresUrl,
    schema: backend.schema,
  });
}
