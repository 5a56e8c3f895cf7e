import { redisTestServer } from '@lunation/store-testkit/redis';
import { Redis } from 'ioredis';

/** The kit's Redis fixture, as the dispatch-bullmq tests use it. */
export const {
  redisUrl,
  connectTestRedis,
  sharedTestRedis,
  uniquePrefix,
  keysWithPrefix,
  deleteKeysWithPrefix,
} = redisTestServer({ Redis, label: 'dispatch-bullmq' });
