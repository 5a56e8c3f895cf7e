import type { Dispatcher } from '@lunation/contract';
import { runDispatcherConformance } from '@lunation/dispatch-testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { testSettings } from './__fixtures__/open-dispatcher.js';
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
  // The kit's worker process opens its dispatcher on the same Redis and key prefix.
  workerProcess: {
    module: new URL('./__fixtures__/open-dispatcher.ts', import.meta.url),
    backend: (dispatcher) => ({ keyPrefix: prefixes.get(dispatcher)! }),
  },
});
