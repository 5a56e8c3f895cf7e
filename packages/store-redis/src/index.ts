export {
  type RedisClient,
  RedisStore,
  type RedisStoreClientOptions,
  type RedisStoreOptions,
  type RedisStoreUrlOptions,
} from './redis-store.js';
