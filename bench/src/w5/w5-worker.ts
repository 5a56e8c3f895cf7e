/**
 * A W5 worker process: `w5-worker.ts '<json W5WorkerConfig>'`. Runs an AgentWorker on the Redis store and the
 * BullMQ dispatcher until SIGTERM; prints `ready`. Started without `--conditions=@lunation/source`, so
 * Lunation loads from its built dist/, like the other benchmarks' children.
 */
import { BullMQDispatcher } from '@lunation/dispatch-bullmq';
import { AgentWorker } from '@lunation/runtime';
import { RedisStore } from '@lunation/store-redis';
import { createW5Runtime } from './w5-agent.js';

export interface W5WorkerConfig {
  redisUrl: string;
  storePrefix: string;
  dispatchPrefix: string;
  concurrency: number;
  modelDelayMs: number;
  leaseTtlMs: number;
  owner: string;
}

const config = JSON.parse(process.argv[2] ?? '{}') as W5WorkerConfig;
const store = new RedisStore({ url: config.redisUrl, keyPrefix: config.storePrefix });
const dispatcher = new BullMQDispatcher({ url: config.redisUrl, keyPrefix: config.dispatchPrefix });
const worker = new AgentWorker({
  runtime: createW5Runtime({ store, ...config }),
  dispatcher,
  concurrency: config.concurrency,
}).start();
process.stdout.write(`${JSON.stringify({ event: 'ready', pid: process.pid })}\n`);
process.once('SIGTERM', async () => {
  await worker.stop({ deadlineMs: 5_000 });
  await dispatcher.close();
  await store.close();
  process.exit(0);
});
