// `@lunation/store-testkit/redis`: the Redis test-server fixture, for the tests of packages that need a real
// server (store-redis, dispatch-bullmq).
export {
  type RedisTestServer,
  type RedisTestServerOptions,
  redisTestServer,
  type TestRedisClient,
  type TestRedisClientClass,
} from './redis-test-server.js';
