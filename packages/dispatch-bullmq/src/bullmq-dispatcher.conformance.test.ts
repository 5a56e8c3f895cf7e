import type { Dispatcher } from '@lunation/contract';
import { runDispatcherConformance } from '@lunation/dispatch-testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import {
  deleteKeysWithPrefix,
  redisUrl,
  sharedTestRedis,
  uniquePrefix,
} from './__fixtures__/redis-test-server.js';
import { BullMQDispatcher } from './bullmq-dispatcher.js';

const redis = sharedTestRedis();
let admin: Redis;
const prefixes = new WeakMap<Dispatcher, string>();

/** Short checks, so that the kit's lost claims come back quickly. */
const testSettings = { stalledIntervalMs: 100, blockMs: 200, resourceRetryMs: 100 };

beforeAll(() => redis.connect());

// Every test fails (none is skipped) with a clear message when Redis is down.
beforeEach(() => {
  admin = redis.connected();
});

afterAll(() => {
  admin?.disconnect();
});

runDispatcherConformance({
  name: 'bullmq',
  async create(policy) {
    const keyPrefix = uniquePrefix();
    const dispatcher = new BullMQDispatcher({ ...policy, ...testSettings, url: redisUrl, keyPrefix });
    prefixes.set(dispatcher, keyPrefix);
    return dispatcher;
  },
  async createSibling(dispatcher, policy) {
    // Its own connections on the same database and prefix, as another process would have.
    return new BullMQDispatcher({
      ...policy,
      ...testSettings,
      url: redisUrl,
      keyPrefix: prefixes.get(dispatcher)!,
    });
  },
  async destroy(dispatcher) {
    await dispatcher.close();
    await deleteKeysWithPrefix(admin, prefixes.get(dispatcher)!);
  },
  redeliveryMs: 3_000,
});
