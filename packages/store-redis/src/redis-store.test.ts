import { type ErrorCode, LunationError, type RunRecord, systemClock } from '@lunation/contract';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  connectTestRedis,
  deleteKeysWithPrefix,
  keysWithPrefix,
  redisUrl,
  sharedTestRedis,
  uniquePrefix,
} from './__fixtures__/redis-test-server.js';
import { type RedisClient, RedisStore } from './redis-store.js';

const redis = sharedTestRedis();
let admin: Redis;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(() => redis.connect());

// Every test fails (none is skipped) with a clear message when Redis is down.
beforeEach(() => {
  admin = redis.connected();
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(() => {
  admin?.disconnect();
});

/** A store on its own key prefix, closed and wiped after the test. */
function openStore(options: { client?: RedisClient; keyPrefix?: string } = {}): RedisStore {
  const keyPrefix = options.keyPrefix ?? uniquePrefix();
  const store = options.client
    ? new RedisStore({ client: options.client, keyPrefix })
    : new RedisStore({ url: redisUrl, keyPrefix });
  cleanups.push(async () => {
    await store.close();
    await deleteKeysWithPrefix(admin, keyPrefix);
  });
  return store;
}

/** An injected client that counts the commands the store sends through it. */
function countingClient(): { client: RedisClient; calls: string[] } {
  const calls: string[] = [];
  const client: RedisClient = {
    evalsha: (...args) => {
      calls.push('evalsha');
      return admin.evalsha(...args);
    },
    eval: (...args) => {
      calls.push('eval');
      return admin.eval(...args);
    },
  };
  return { client, calls };
}

async function rejection(promise: Promise<unknown>, code: ErrorCode): Promise<LunationError> {
  const error = await promise.then(
    (value) => expect.fail(`expected a "${code}" error, got ${JSON.stringify(value)}`),
    (reason: unknown) => reason,
  );
  if (!LunationError.isInstance(error)) expect.fail(`expected a LunationError, got ${String(error)}`);
  expect(error.code, error.message).toBe(code);
  return error;
}

function runRecord(threadId: string, runId: string): RunRecord {
  const now = Date.now();
  return {
    identity: { threadId, runId, agentId: 'assistant', origin: 'user' },
    status: 'running',
    steps: 0,
    usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
    openTickets: [],
    state: {},
    createdAt: now,
    updatedAt: now,
  };
}

const hello = { id: 'm1', role: 'user' as const, content: [{ type: 'text' as const, text: 'hello' }] };

describe('RedisStore round trips', () => {
  it('sends each call as one EVALSHA, and loads a script with EVAL only when the server lacks it', async () => {
    const { client, calls } = countingClient();
    const store = openStore({ client });
    await store.createThread({ id: 't1' });
    await store.commit({
      threadId: 't1',
      expectedMessageCount: 0,
      messages: [hello],
      run: runRecord('t1', 'r1'),
    });
    calls.length = 0;

    await store.commit({
      threadId: 't1',
      expectedMessageCount: 1,
      messages: [hello, hello],
      run: runRecord('t1', 'r1'),
      threadState: { step: 2 },
    });
    expect(calls).toEqual(['evalsha']);

    calls.length = 0;
    await admin.script('FLUSH');
    expect(await store.commit({ threadId: 't1', expectedMessageCount: 3, messages: [hello] })).toEqual({
      messageCount: 4,
    });
    expect(calls).toEqual(['evalsha', 'eval']);
    calls.length = 0;
    await store.loadCheckpoint('t1');
    expect(calls).toEqual(['evalsha', 'eval']);
    calls.length = 0;
    await store.loadCheckpoint('t1');
    expect(calls).toEqual(['evalsha']);
  });
});

describe('RedisStore keys', () => {
  it('writes exactly the documented keys under the prefix', async () => {
    const keyPrefix = uniquePrefix();
    const store = openStore({ keyPrefix });
    await store.createThread({ id: 't1', resourceId: 'user-1' });
    await store.commit({
      threadId: 't1',
      expectedMessageCount: 0,
      messages: [hello],
      run: runRecord('t1', 'r1'),
      threadState: { a: 1 },
    });
    await store.beginToolExecution({
      runId: 'r1',
      toolCallId: 'c1',
      threadId: 't1',
      toolName: 'lookup',
      idempotencyKey: 'r1:c1',
    });
    await store.acquireLease({ threadId: 't1', owner: 'w', runId: 'r1', ttlMs: 30_000 });
    const keys = (await keysWithPrefix(admin, keyPrefix)).map((key) => key.slice(keyPrefix.length));
    expect(keys).toEqual(
      [
        'resource:user-1:threads',
        'run:r1',
        'run:r1:tool:c1',
        'run:r1:tools',
        'thread:t1',
        'thread:t1:lease',
        'thread:t1:lease-token',
        'thread:t1:messages',
        'thread:t1:runs',
        'thread:t1:state',
        'thread:t1:tool-runs',
        'threads',
      ].sort(),
    );
    const leaseTtl = await admin.pttl(`${keyPrefix}thread:t1:lease`);
    expect(leaseTtl).toBeGreaterThan(25_000);
    expect(leaseTtl).toBeLessThanOrEqual(30_000);

    expect(await store.deleteThread('t1')).toBe(true);
    // Only the token counter survives, so later leases still get higher tokens.
    expect(await keysWithPrefix(admin, keyPrefix)).toEqual([`${keyPrefix}thread:t1:lease-token`]);
  });

  it('uses the "lunation:" prefix by default', async () => {
    const id = `default-prefix-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const store = new RedisStore({ url: redisUrl });
    cleanups.push(async () => {
      await store.deleteThread(id);
      await store.close();
    });
    await store.createThread({ id });
    expect(await admin.exists(`lunation:thread:${id}`)).toBe(1);
  });

  it('keeps ids containing ":" or "%" apart from the keys of other records', async () => {
    const store = openStore();
    const ids = ['a', 'a:messages', 'a%3Amessages', 'a:state', 'b:c:d'];
    for (const [index, id] of ids.entries()) {
      await store.createThread({ id, metadata: { index } });
      await store.commit({
        threadId: id,
        expectedMessageCount: 0,
        messages: Array.from({ length: index + 1 }, () => hello),
        threadState: { id },
        run: runRecord(id, `${id}:run`),
      });
    }
    for (const [index, id] of ids.entries()) {
      const checkpoint = await store.loadCheckpoint(id);
      expect(checkpoint?.thread.metadata).toEqual({ index });
      expect(checkpoint?.messages).toHaveLength(index + 1);
      expect(checkpoint?.threadState).toEqual({ id });
      expect(checkpoint?.latestRun?.identity.runId).toBe(`${id}:run`);
    }
    expect(await store.deleteThread('a')).toBe(true);
    expect(await store.getThread('a:messages')).toBeDefined();
    expect(await store.listMessages('a:messages')).toHaveLength(2);
  });

  it('keeps stores with different prefixes apart', async () => {
    const left = openStore();
    const right = openStore();
    await left.createThread({ id: 't1', metadata: { side: 'left' } });
    expect(await right.getThread('t1')).toBeUndefined();
    await right.createThread({ id: 't1', metadata: { side: 'right' } });
    expect((await left.getThread('t1'))?.metadata).toEqual({ side: 'left' });
    expect((await right.listThreads()).items.map((thread) => thread.metadata)).toEqual([{ side: 'right' }]);
  });
});

describe('RedisStore connection', () => {
  it('leaves an injected client open on close and refuses calls afterwards', async () => {
    const client = await connectTestRedis();
    const store = new RedisStore({ client, keyPrefix: uniquePrefix() });
    expect(await store.getThread('t1')).toBeUndefined();
    await store.close();
    expect(client.status).toBe('ready');
    expect(await client.ping()).toBe('PONG');
    await rejection(store.getThread('t1'), 'store-unavailable');
    client.disconnect();
  });

  it('closes a connection it opened itself', async () => {
    const store = new RedisStore({ url: redisUrl, keyPrefix: uniquePrefix() });
    expect(await store.getLease('t1')).toBeUndefined();
    await store.close();
    await store.close();
    await rejection(store.getLease('t1'), 'store-unavailable');
  });

  it('rejects an injected client that has its own keyPrefix', async () => {
    const client = { ...countingClient().client, options: { keyPrefix: 'app:' } };
    expect(() => new RedisStore({ client })).toThrow(/keyPrefix/);
    try {
      new RedisStore({ client });
    } catch (error) {
      expect(LunationError.hasCode(error, 'invalid-argument')).toBe(true);
    }
  });

  it('fails with a retryable store-unavailable carrying the cause when Redis is unreachable', async () => {
    const store = new RedisStore({ url: 'redis://127.0.0.1:1', keyPrefix: uniquePrefix() });
    try {
      const started = Date.now();
      const error = await rejection(
        store.commit({ threadId: 't1', expectedMessageCount: 0, messages: [] }),
        'store-unavailable',
      );
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(error.isRetryable).toBe(true);
      expect(error.cause).toBeInstanceOf(Error);
      expect(error.message).toMatch(/ECONNREFUSED/);
    } finally {
      await store.close();
    }
  });
});

describe('RedisStore on an injected clock', () => {
  it('stamps records with its clock (leases keep the server time)', async () => {
    let now = 5_000;
    const keyPrefix = uniquePrefix();
    const store = new RedisStore({ url: redisUrl, keyPrefix, clock: { ...systemClock, now: () => now } });
    cleanups.push(async () => {
      await store.close();
      await deleteKeysWithPrefix(admin, keyPrefix);
    });
    expect(await store.createThread({ id: 't1' })).toMatchObject({ createdAt: 5_000, updatedAt: 5_000 });
    now = 5_010;
    expect(await store.updateThreadMetadata('t1', { a: 1 })).toMatchObject({ updatedAt: 5_010 });
  });
});
