import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { makeSubmission, uniqueId } from '@lunation/dispatch-testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  deleteKeysWithPrefix,
  redisUrl,
  sharedTestRedis,
  uniquePrefix,
} from './__fixtures__/redis-test-server.js';
import { BullMQDispatcher } from './bullmq-dispatcher.js';

const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const worker = fileURLToPath(new URL('./__fixtures__/claiming-worker.ts', import.meta.url));
const redis = sharedTestRedis();
const cleanups: (() => Promise<void>)[] = [];

/** The documented bound with the default settings: lockMs + stalledIntervalMs (2000 + 500). */
const documentedBoundMs = 2_500;
/** Scheduling slack of a busy test machine on top of the bound. */
const slackMs = 1_500;

beforeAll(() => redis.connect());

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(() => {
  redis.connected().disconnect();
});

/** Starts the claiming worker; resolves once it holds the claim. */
function startWorker(keyPrefix: string) {
  const child = spawn(
    process.execPath,
    ['--conditions=@lunation/source', '--import', tsx, worker, JSON.stringify({ url: redisUrl, keyPrefix })],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const claimed = new Promise<{ threadId: string; token: string }>((resolve, reject) => {
    let buffered = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      for (const line of buffered.split('\n').slice(0, -1)) {
        const message = JSON.parse(line) as { event: string; threadId: string; token: string };
        if (message.event === 'claimed') resolve(message);
        else reject(new Error(`the worker failed: ${line}`));
      }
      buffered = buffered.slice(buffered.lastIndexOf('\n') + 1);
    });
    child.on('close', () => reject(new Error(`the worker exited before claiming; stderr:\n${stderr}`)));
  });
  return { child, claimed, exited };
}

describe('BullMQDispatcher with a worker that is SIGKILLed', () => {
  it('redelivers the thread to another worker within lockMs + stalledIntervalMs, with what was not acknowledged', async () => {
    redis.connected();
    const keyPrefix = uniquePrefix();
    const dispatcher = new BullMQDispatcher({ url: redisUrl, keyPrefix });
    cleanups.push(async () => {
      await dispatcher.close();
      await deleteKeysWithPrefix(redis.connected(), keyPrefix);
    });
    const threadId = uniqueId('thread');
    const [first, second] = [makeSubmission(threadId), makeSubmission(threadId)];
    await dispatcher.submit(first);
    await dispatcher.submit(second);

    const process = startWorker(keyPrefix);
    cleanups.push(async () => {
      process.child.kill('SIGKILL');
      await process.exited;
    });
    const held = await process.claimed;
    expect(held.threadId).toBe(threadId);
    // Warm the survivor up (its worker side exists, as in a running fleet) before the kill.
    expect(await dispatcher.claim({ workerId: 'survivor' })).toBeUndefined();

    process.child.kill('SIGKILL');
    const killedAt = Date.now();
    await process.exited;
    const claim = await dispatcher.claim({ workerId: 'survivor', waitMs: 15_000 });
    const redeliveredAfterMs = Date.now() - killedAt;

    expect(claim).toEqual(expect.objectContaining({ threadId, workerId: 'survivor', attempt: 1 }));
    expect(claim!.token).not.toBe(held.token);
    expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual([second.id]);
    expect(redeliveredAfterMs).toBeLessThan(documentedBoundMs + slackMs);
    expect(await dispatcher.complete(claim!)).toEqual({ rewoken: true });
  });
});
