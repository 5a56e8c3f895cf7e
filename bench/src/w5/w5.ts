/**
 * W5, a worker fleet: `pnpm --filter @lunation/bench run bench:w5` (after `pnpm build`).
 *
 * Worker processes (`w5-worker.ts`, Lunation from dist/) run AgentWorkers on a backend (`--backend bullmq`: the
 * Redis store and the BullMQ dispatcher; `--backend postgres`: the PostgreSQL store and the pg-boss dispatcher);
 * this process submits through a FleetClient and follows every run's events.
 * - Throughput with 1, 2 and 4 workers (`--workers`): `--runs` runs of S = 3 (the model awaits 20 ms per call,
 *   tools return at once) submitted at once; runs per second from the first submit to the last `run-end`, and
 *   submit → the run's first `step-start` as the client sees it (p50/p99).
 * - Kill → continue: a run whose tool takes 4 s, its worker SIGKILLed mid-tool (two workers sharing a lease owner,
 *   `leaseTtlMs` 6000, the dispatchers' 2 s claim lock); the time from the kill to the cut-off call's re-run on
 *   the other worker, as the client sees it (p50/p99 over `--kills` trials).
 * Writes bench/results/w5.json (BullMQ) or bench/results/w5-postgres.json.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { AgentEvent } from '@lunation/contract';
import { FleetClient } from '@lunation/fleet';
import { benchDir, lunationFrom } from '../machine.js';
import { cleanupW5Backend, openW5Backend, type W5Backend } from './w5-backend.js';
import type { W5WorkerConfig } from './w5-worker.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '400' },
    workers: { type: 'string', default: '1,2,4' },
    concurrency: { type: 'string', default: '50' },
    kills: { type: 'string', default: '20' },
    backend: { type: 'string', default: 'bullmq' },
  },
  strict: true,
});
const runs = Number(values.runs);
const workerCounts = values.workers.split(',').map(Number);
const concurrency = Number(values.concurrency);
const killTrials = Number(values.kills);
if (values.backend !== 'bullmq' && values.backend !== 'postgres') {
  throw new Error(`--backend must be bullmq or postgres, not ${values.backend}`);
}
const backend: W5Backend = values.backend;
const modelDelayMs = 20;
const label = `lunation-w5:${process.pid}`;

interface Worker {
  kill(signal: NodeJS.Signals): void;
  exited: Promise<void>;
}

function startWorker(config: W5WorkerConfig): Promise<Worker> {
  const file = fileURLToPath(new URL('./w5-worker.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', file, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (chunk.includes('"ready"')) resolve({ kill: (signal) => child.kill(signal), exited });
    });
    child.once('exit', (code) => reject(new Error(`a W5 worker exited with ${code} before it was ready`)));
  });
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return (
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN
  );
}

/** A fleet of `count` workers on fresh keys, and a client; `close()` stops and removes everything. */
async function fleet(name: string, count: number, leaseTtlMs: number) {
  const prefix = `${label}:${name}:`;
  const config: W5WorkerConfig = {
    backend,
    prefix,
    concurrency,
    modelDelayMs,
    leaseTtlMs,
    owner: `w5-${name}`,
  };
  const workers = await Promise.all(Array.from({ length: count }, () => startWorker(config)));
  const { store, dispatcher } = await openW5Backend(backend, prefix);
  const client = new FleetClient({ dispatcher, store });
  return {
    client,
    workers,
    config,
    close: async () => {
      await Promise.all(
        workers.map(async (worker) => {
          worker.kill('SIGTERM');
          await worker.exited;
        }),
      );
      await dispatcher.close();
      await store.close();
      await cleanupW5Backend(backend, prefix);
    },
  };
}

/** Follows a run until its `run-end`; calls `on` with each event type and when it arrived. */
async function follow(
  client: FleetClient,
  runId: string,
  on: (event: AgentEvent, at: number) => void,
): Promise<void> {
  for await (const { event } of client.events(runId, { signal: AbortSignal.timeout(120_000) })) {
    on(event, performance.now());
    if (event.type === 'run-end' && event.status !== 'done')
      throw new Error(`run ${runId} ended ${event.status}`);
  }
}

async function throughput(count: number) {
  const { client, close } = await fleet(`throughput-${count}`, count, 6_000);
  try {
    // Warm up: a few runs so every worker has loaded and connected.
    await Promise.all(
      Array.from({ length: count * 4 }, async (_, index) => {
        const { runId } = await client.send({ threadId: `warm-${index}`, input: 'work 0' });
        await follow(client, runId, () => {});
      }),
    );
    const firstStep: number[] = [];
    const start = performance.now();
    let lastEnd = start;
    await Promise.all(
      Array.from({ length: runs }, async (_, index) => {
        const submitted = performance.now();
        const { runId } = await client.send({ threadId: `t-${index}`, input: 'work 0' });
        let seenStep = false;
        await follow(client, runId, (event, at) => {
          if (event.type === 'step-start' && !seenStep) {
            seenStep = true;
            firstStep.push(at - submitted);
          }
          if (event.type === 'run-end') lastEnd = Math.max(lastEnd, at);
        });
      }),
    );
    const seconds = (lastEnd - start) / 1000;
    return {
      workers: count,
      runsPerSecond: runs / seconds,
      submitToFirstStepMs: { p50: percentile(firstStep, 50), p99: percentile(firstStep, 99) },
    };
  } finally {
    await close();
  }
}

async function killToContinue() {
  const name = 'kill';
  const { client, workers, config, close } = await fleet(name, 2, 6_000);
  const live = [...workers];
  const latencies: number[] = [];
  let trials = 0;
  try {
    while (latencies.length < killTrials && trials < killTrials * 4) {
      trials++;
      const { runId } = await client.send({ threadId: `kill-${trials}`, input: 'work 4000' });
      let killedAt = 0;
      let victim: Worker | undefined;
      await follow(client, runId, (event, at) => {
        if (event.type !== 'tool-execution-start') return;
        if (killedAt === 0) {
          // Two workers share the thread's lease owner: kill one at random; only kills that hit the run count
          // (the cut-off call then runs again, with rerun: true).
          victim = live.splice(Math.floor(Math.random() * live.length), 1)[0];
          victim?.kill('SIGKILL');
          killedAt = performance.now();
        } else if (event.rerun) latencies.push(at - killedAt);
      });
      await victim?.exited;
      live.push(await startWorker(config));
    }
    return {
      trials,
      hits: latencies.length,
      killToRerunMs: {
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        max: Math.max(...latencies),
      },
    };
  } finally {
    workers.splice(0, workers.length, ...live);
    await close();
  }
}

const loaded = lunationFrom();
const results = {
  when: new Date().toISOString(),
  node: process.version,
  cpus: cpus().length,
  loadAverage: loadavg(),
  lunationFrom: loaded.from,
  backend,
  settings: { runs, concurrencyPerWorker: concurrency, modelDelayMs, steps: 3, leaseTtlMs: 6_000 },
  throughput: [] as Awaited<ReturnType<typeof throughput>>[],
  kill: undefined as Awaited<ReturnType<typeof killToContinue>> | undefined,
};
for (const count of workerCounts) {
  const figure = await throughput(count);
  results.throughput.push(figure);
  console.log(
    `W5 ${count} worker(s): ${figure.runsPerSecond.toFixed(0)} runs/s; submit -> first step p50 ${figure.submitToFirstStepMs.p50.toFixed(1)} ms, p99 ${figure.submitToFirstStepMs.p99.toFixed(1)} ms`,
  );
}
if (killTrials > 0) {
  results.kill = await killToContinue();
  const { killToRerunMs, hits, trials } = results.kill;
  console.log(
    `W5 kill -> the cut-off call runs again on another worker (${hits} of ${trials} kills hit the run): p50 ${(killToRerunMs.p50 / 1000).toFixed(2)} s, p99 ${(killToRerunMs.p99 / 1000).toFixed(2)} s, max ${(killToRerunMs.max / 1000).toFixed(2)} s`,
  );
}
const output = backend === 'bullmq' ? 'w5.json' : 'w5-postgres.json';
writeFileSync(join(benchDir, 'results', output), `${JSON.stringify(results, null, 2)}\n`);
console.log(`Lunation from ${loaded.from}; wrote bench/results/${output}`);
process.exit(0);
