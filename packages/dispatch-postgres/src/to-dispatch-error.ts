import type { LunationError } from '@lunation/contract';
import { toPostgresError } from '@lunation/contract/postgres-utils';

/**
 * Maps anything a pg or pg-boss call threw to a LunationError (the contract's PostgreSQL mapping);
 * LunationErrors pass through unchanged. `connectionError` is the pool's last error of its own (an idle
 * connection lost), named when the server is unavailable.
 */
export function toDispatchError(error: unknown, operation: string, connectionError?: unknown): LunationError {
  return toPostgresError(error, { adapter: 'dispatcher', operation, connectionError });
}
