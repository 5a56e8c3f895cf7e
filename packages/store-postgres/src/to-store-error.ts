import type { LunationError } from '@lunation/contract';
import { toPostgresError } from '@lunation/contract/postgres-utils';

/**
 * Maps anything a pg call threw to a LunationError (the contract's PostgreSQL mapping); LunationErrors pass
 * through unchanged. `connectionError` is the pool's last error of its own (an idle connection lost).
 */
export function toStoreError(error: unknown, connectionError?: unknown): LunationError {
  return toPostgresError(error, { adapter: 'store', connectionError });
}
