import type { LunationStore } from '@lunation/contract';
import { runStoreConformance } from '@lunation/store-testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import {
  deleteKeysWithPrefix,
  redisUrl,
  sharedTestRedis,
  uniquePrefix,
} from './__fixtures__/redis-test-server.js';
import { RedisStore } from './redis-store.js';

const redis = sharedTestRedis();
let admin: Redis;
const prefixes = new WeakMap<LunationStore, string>();

beforeAll(() => redis.connect());

// Every test fails (none is skipped) with a clear message when Redis is down.
beforeEach(() => {
  admin = redis.connected();
});

afterAll(() => {
  admin?.disconnect();
});

runStoreConformance({
  name: 'redis',
  async create() {
    const keyPrefix = uniquePrefix();
    const store = new RedisStore({ url: redisUrl, keyPrefix });
    prefixes.set(store, keyPrefix);
    return store;
  },
  async destroy(store) {
    await store.close();
    await deleteKeysWithPrefix(admin, prefixes.get(store)!);
  },
  // Its own connection on the same database and prefix, as another process would have.
  async createSibling(store) {
    return new RedisStore({ url: redisUrl, keyPrefix: prefixes.get(store)! });
  },
});
