import { CheckedStore } from '@lunation/contract/store-utils';
import { RedisBackend } from './redis-backend.js';
import type { RedisStoreOptions } from './redis-store-options.js';

export type {
  RedisClient,
  RedisStoreClientOptions,
  RedisStoreOptions,
  RedisStoreUrlOptions,
} from './redis-store-options.js';

/**
 * A `LunationStore` in Redis. Every call is one Lua script, so each is atomic and one round trip.
 *
 * @remarks Standalone Redis (or one primary) only: scripts build keys from ids, which Redis Cluster forbids.
 */
export class RedisStore extends CheckedStore {
  declare readonly kind: 'redis';

  constructor(options: RedisStoreOptions = {}) {
    super(new RedisBackend(options));
  }
}
