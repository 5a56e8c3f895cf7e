/**
 * A W5 worker process: `w5-worker.ts '<json W5WorkerConfig>'`. Runs an AgentWorker on the backend's store and
 * dispatcher (Redis + BullMQ, or PostgreSQL + pg-boss) until SIGTERM; prints `ready`. Started without
 * `--conditions=@lunation/source`, so Lunation loads from its built dist/, like the other benchmarks' children.
 */
import { AgentWorker } from '@lunation/fleet';
import { createW5Runtime } from './w5-agent.js';
import { openW5Backend, type W5Backend } from './w5-backend.js';

export interface W5WorkerConfig {
  backend: W5Backend;
  prefix: string;
  concurrency: number;
  modelDelayMs: number;
  leaseTtlMs: number;
  owner: string;
}

const config = JSON.parse(process.argv[2] ?? '{}') as W5WorkerConfig;
const { store, dispatcher } = await openW5Backend(config.backend, config.prefix);
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
