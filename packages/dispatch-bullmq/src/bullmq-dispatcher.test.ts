import { LunationError, systemClock } from '@lunation/contract';
import { makeEvents, makeSubmission, sleep, uniqueId } from '@lunation/dispatch-testkit';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  deleteKeysWithPrefix,
  keysWithPrefix,
  redisUrl,
  sharedTestRedis,
  uniquePrefix,
} from './__fixtures__/redis-test-server.js';
import { BullMQDispatcher } from './bullmq-dispatcher.js';
import type { BullMQDispatcherCommonOptions } from './bullmq-dispatcher-options.js';

const redis = sharedTestRedis();
const cleanups: (() => Promise<void>)[] = [];

beforeAll(() => redis.connect());

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(() => {
  redis.connected().disconnect();
});

/** A dispatcher on a fresh prefix, closed and cleaned up after the test. */
function open(options: BullMQDispatcherCommonOptions = {}): {
  dispatcher: BullMQDispatcher;
  keyPrefix: string;
} {
  const admin = redis.connected();
  const keyPrefix = options.keyPrefix ?? uniquePrefix();
  const dispatcher = new BullMQDispatcher({ url: redisUrl, ...options, keyPrefix });
  cleanups.push(async () => {
    await dispatcher.close();
    await deleteKeysWithPrefix(admin, keyPrefix);
  });
  return { dispatcher, keyPrefix };
}

async function expectCode(promise: Promise<unknown>, code: string): Promise<LunationError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(LunationError.isInstance(error), String(error)).toBe(true);
  expect((error as LunationError).code).toBe(code);
  return error as LunationError;
}

describe('BullMQDispatcher', () => {
  it('gives thread ids with ":", "%", only digits or any unicode a job of their own', async () => {
    const { dispatcher, keyPrefix } = open();
    const threads = ['a:b', 'a%3Ab', '123', 'fil 🚀 ünï'];
    for (const threadId of threads) await dispatcher.submit(makeSubmission(threadId));
    const claimed: string[] = [];
    for (const _ of threads) claimed.push((await dispatcher.claim({ workerId: 'w1' }))!.threadId);
    expect(claimed).toEqual(threads);
    const jobs = (await keysWithPrefix(redis.connected(), `${keyPrefix}bull:threads:t.`)).filter(
      (key) => !key.endsWith(':lock'),
    );
    expect(jobs.map((key) => key.slice(`${keyPrefix}bull:threads:`.length)).sort()).toEqual(
      ['t.a%3Ab', 't.a%253Ab', 't.123', 't.fil 🚀 ünï'].sort(),
    );
  });

  it('reads and clears a cancel request of the earlier layout (one per thread) beside requests per run', async () => {
    const { dispatcher, keyPrefix } = open();
    const legacy = { id: 'old', threadId: 't1', runId: 'run-2', reason: 'stop run 2', requestedAt: 1 };
    await redis.connected().hset(`${keyPrefix}cancel:t1`, 'id', 'old', 'request', JSON.stringify(legacy));
    const first = await dispatcher.requestCancel({ threadId: 't1', runId: 'run-1', reason: 'stop run 1' });
    expect(await dispatcher.cancelRequests('t1')).toEqual([legacy, first]);
    expect(await dispatcher.clearCancel('t1', 'old')).toBe(true);
    expect(await dispatcher.cancelRequests('t1')).toEqual([first]);
    expect(await redis.connected().hkeys(`${keyPrefix}cancel:t1`)).toEqual(['r:run-1']);
  });

  it('keeps every key under keyPrefix, named as the README lists them', async () => {
    const { dispatcher, keyPrefix } = open();
    await dispatcher.submit(makeSubmission('thread-1', { resourceId: 'tenant-a' }));
    const claim = (await dispatcher.claim({ workerId: 'w1' }))!;
    const [entry] = await dispatcher.pending('thread-1');
    await dispatcher.acknowledge('thread-1', [entry!.id]);
    await dispatcher.submit(makeSubmission('thread-1', { resourceId: 'tenant-a' }));
    await dispatcher.requestCancel({ threadId: 'thread-1', reason: 'stop' });
    await dispatcher.appendEvents('run-1', makeEvents('run-1', 2));
    expect(claim.threadId).toBe('thread-1');
    const ours = (await keysWithPrefix(redis.connected(), keyPrefix))
      .map((key) => key.slice(keyPrefix.length))
      .filter((key) => !key.startsWith('bull:'));
    expect(ours).toEqual(
      [
        'active-tenants',
        'active:tenant-a',
        'cancel:thread-1',
        'events:run-1',
        'events:run-1:meta',
        'inbox-sequence',
        'inbox:thread-1',
        'inbox:thread-1:entries',
        'inbox:thread-1:seen',
        'inbox:thread-1:tenants',
        'pending-threads',
        'stats',
      ].sort(),
    );
  });

  it('leaves an injected client open and refuses one with a keyPrefix of its own', async () => {
    const client = new Redis(redisUrl);
    cleanups.push(async () => {
      client.disconnect();
    });
    const { keyPrefix } = open();
    const injected = new BullMQDispatcher({ client, keyPrefix });
    const threadId = uniqueId('thread');
    await injected.submit(makeSubmission(threadId));
    expect((await injected.claim({ workerId: 'w1' }))?.threadId).toBe(threadId);
    await injected.close();
    expect(await client.ping()).toBe('PONG');
    await expectCode(injected.depth(), 'store-unavailable');
    const prefixed = new Redis(redisUrl, { keyPrefix: 'mine:', lazyConnect: true });
    cleanups.push(async () => {
      prefixed.disconnect();
    });
    expect(() => new BullMQDispatcher({ client: prefixed })).toThrow(/keyPrefix/);
  });

  it('puts a stalled job back to wait however often it stalls, and claims a job an older version marked to fail', async () => {
    const { dispatcher, keyPrefix } = open({ stalledIntervalMs: 100, blockMs: 200 });
    const threadId = uniqueId('thread');
    await dispatcher.submit(makeSubmission(threadId, { resourceId: 'tenant-a' }));
    const queue = new Queue('threads', { connection: redis.connected(), prefix: `${keyPrefix}bull` });
    cleanups.push(() => queue.close());
    const jobId = `t.${threadId}`;
    for (let loss = 0; loss < 12; loss++) {
      const claim = await dispatcher.claim({ workerId: `stalls-${loss}`, lockMs: 100, waitMs: 3_000 });
      expect(claim).toEqual(expect.objectContaining({ threadId, attempt: 1 }));
      await sleep(350);
      expect(['waiting', 'active']).toContain(await queue.getJobState(jobId));
    }
    expect(
      Number(await redis.connected().hget(`${keyPrefix}bull:threads:${jobId}`, 'stc')),
    ).toBeGreaterThanOrEqual(11);
    // BullMQ's stalled check of a dispatcher with the old limit marked the job to fail at its next fetch.
    await redis
      .connected()
      .hset(`${keyPrefix}bull:threads:${jobId}`, 'defa', 'job stalled more than allowable limit');
    const claim = await dispatcher.claim({ workerId: 'healthy', waitMs: 3_000 });
    expect(claim).toEqual(expect.objectContaining({ threadId, attempt: 1 }));
    expect(await redis.connected().hexists(`${keyPrefix}bull:threads:${jobId}`, 'defa')).toBe(0);
    expect(await dispatcher.deadLetters()).toEqual([]);
    expect((await dispatcher.depth()).byResource['tenant-a']).toEqual({
      pending: 1,
      active: 1,
      deadLettered: 0,
    });
  });

  it('refuses the removed maxLostClaims option, saying why', () => {
    const options = { url: redisUrl, maxLostClaims: 10 } as BullMQDispatcherCommonOptions;
    expect(() => new BullMQDispatcher(options)).toThrow(/maxLostClaims was removed/);
  });

  it('wakes a thread whose job vanished in a crash (the orphan sweep)', async () => {
    const { dispatcher, keyPrefix } = open({ sweepIntervalMs: 200, blockMs: 200 });
    const threadId = uniqueId('thread');
    await dispatcher.submit(makeSubmission(threadId));
    const claim = (await dispatcher.claim({ workerId: 'w1' }))!;
    const late = makeSubmission(threadId);
    await dispatcher.submit(late);
    // A worker that completed the job and died before it could re-wake the thread.
    const connection = redis.connected().duplicate();
    const queue = new Queue('threads', { connection, prefix: `${keyPrefix}bull` });
    cleanups.push(async () => {
      await queue.close();
      connection.disconnect();
    });
    const job = (await Job.fromId(queue, `t.${threadId}`))!;
    await job.moveToCompleted(null, claim.token, false);
    expect(await queue.getJobState(`t.${threadId}`)).toBe('unknown');
    const swept = await dispatcher.claim({ workerId: 'w2', waitMs: 5_000 });
    expect(swept?.threadId).toBe(threadId);
    expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toContain(late.id);
  });

  it('raises store-unavailable, without hanging, when Redis cannot be reached', async () => {
    const dispatcher = new BullMQDispatcher({ url: 'redis://127.0.0.1:1', commandTimeoutMs: 500 });
    cleanups.push(() => dispatcher.close());
    const error = await expectCode(
      dispatcher.submit(makeSubmission(uniqueId('thread'))),
      'store-unavailable',
    );
    expect(error.isRetryable).toBe(true);
    expect(error.message).toMatch(/Redis is unavailable/);
    const claim = await expectCode(dispatcher.claim({ workerId: 'w1', waitMs: 100 }), 'store-unavailable');
    expect(claim.details).toEqual({ timeoutMs: 500 });
    await expectCode(
      dispatcher.watchCancel('thread-1', () => {}),
      'store-unavailable',
    );
    await expectCode(dispatcher.readEvents('run-1'), 'store-unavailable');
    await expectCode(dispatcher.depth(), 'store-unavailable');
  });

  it('checks a handed-back claim, retryable and a cancel listener as PostgresDispatcher does (it passed them on unchecked)', async () => {
    const { dispatcher } = open();
    const forged = { threadId: '', token: 'x' } as never;
    await expectCode(dispatcher.extend(forged), 'invalid-argument');
    await expectCode(dispatcher.complete(null as never), 'invalid-argument');
    await expectCode(dispatcher.fail(forged, new Error('boom')), 'invalid-argument');
    await expectCode(dispatcher.handBack({ threadId: 't1', token: '' } as never), 'invalid-argument');
    await dispatcher.submit(makeSubmission('t1'));
    const claim = (await dispatcher.claim({ workerId: 'w1' }))!;
    await expectCode(
      dispatcher.fail(claim, new Error('boom'), { retryable: 'yes' as never }),
      'invalid-argument',
    );
    await expectCode(dispatcher.watchCancel('t1', 'not a function' as never), 'invalid-argument');
    // Nothing was settled: the claim still holds.
    await dispatcher.extend(claim);
    expect(await dispatcher.complete(claim)).toEqual({ rewoken: true });
  });

  it('refuses bad settings with invalid-argument', () => {
    for (const options of [
      { queueName: 'a:b' },
      { lockMs: 0 },
      { stalledIntervalMs: 1.5 },
      { maxAttempts: 0 },
    ]) {
      let caught: unknown;
      try {
        new BullMQDispatcher({ url: redisUrl, ...options });
      } catch (error) {
        caught = error;
      }
      expect(LunationError.hasCode(caught, 'invalid-argument'), JSON.stringify(options)).toBe(true);
    }
  });
});

describe('BullMQDispatcher on an injected clock and id source', () => {
  it('names claims and cancel requests from its ids and stamps them with its clock', async () => {
    let counter = 0;
    const ids = { id: () => `injected-${++counter}`, random: () => 0.5 };
    // The host's time (BullMQ's locks run on it), each reading noted.
    const readings: number[] = [];
    const clock = { ...systemClock, now: () => readings[readings.push(systemClock.now()) - 1] as number };
    const { dispatcher } = open({ clock, ids });
    const threadId = uniqueId('clock');
    await dispatcher.submit(makeSubmission(threadId, { id: 's1' }));
    const claim = await dispatcher.claim({ workerId: 'w1', waitMs: 5_000 });
    expect(claim?.token).toMatch(/^injected-\d+$/);
    const before = readings.length;
    const request = await dispatcher.requestCancel({ threadId, reason: 'stop' });
    expect(request.id).toMatch(/^injected-\d+$/);
    expect(readings.slice(before)).toEqual([request.requestedAt]);
  });
});
