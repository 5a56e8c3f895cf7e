/**
 * W1 with OpenTelemetry tracing on beside off: `pnpm --filter @lunation/bench run bench:tracing` (after
 * `pnpm build`; Lunation loads from its built `dist/`).
 *
 * The W1 tool loop (S = 10, non-streaming) with no store, MemoryStore and SqliteStore (file), each twice in one
 * process: without instrumentation, and with `@lunation/otel` on a real SDK tracer (`TracerProvider`, always
 * sampled, a `BatchSpanProcessor` as in production) whose exporter drops the spans (src/tracing/sdk-tracing.ts). The two variants alternate in
 * `--rounds` rounds (the order swapped every round) so drift on a shared machine hits both alike; each round
 * times a few batches of runs per variant and the figure is the median over the rounds' medians. A third variant
 * samples 10 % of the runs (what a busy production service typically keeps).
 * Writes bench/results/w1-tracing.json (shown in docs/benchmarks.md by `pnpm bench --render`).
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Instrumentation } from '@lunation/contract';
import { createLunation } from '../frameworks/lunation.js';
import type { Harness, StoreKind } from '../harness.js';
import { benchDir, lunationFrom, packageVersion } from '../machine.js';
import { stats, type TimingPlan, timeRuns } from '../measure.js';
import { expectToolExecutions, Script } from '../script.js';
import { createScratch, type Scratch } from '../workloads/scratch.js';
import { benchTracing, spansPerRun } from './sdk-tracing.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '7' },
    stores: { type: 'string', default: 'none,memory,sqlite' },
    smoke: { type: 'boolean', default: false },
  },
  strict: true,
});
const rounds = values.smoke ? 1 : Number(values.rounds);
const stores = values.stores.split(',') as StoreKind[];
const steps = 10;
const plan: TimingPlan = values.smoke
  ? { warmupMs: 0, warmupRuns: 2, warmupMaxMs: 10_000, reps: 2, repMs: 0, minRunsPerRep: 2 }
  : { warmupMs: 300, warmupRuns: 100, warmupMaxMs: 3000, reps: 5, repMs: 100, minRunsPerRep: 3 };

interface Variant {
  name: 'off' | 'on' | 'sampled';
  harness: Harness;
  script: Script;
  scratch: Scratch;
  perStepUs: number[];
  cpuPerStepUs: number[];
  runs: number;
}

/** One store's figures: µs/step (wall and CPU) with tracing off and on, and the spans a step made. */
export interface TracingFigure {
  store: StoreKind;
  steps: number;
  rounds: number;
  off: { perStepUs: number; cpuPerStepUs: number };
  on: { perStepUs: number; cpuPerStepUs: number };
  /** Tracing on with 10 % of runs sampled (`ParentBasedSampler` over `TraceIdRatioBasedSampler(0.1)`). */
  sampled: { perStepUs: number; cpuPerStepUs: number };
  /** (on − off) / off of the wall figures, in percent. */
  overheadPercent: number;
  cpuOverheadPercent: number;
  spansPerStep: number;
}

/** What bench/results/w1-tracing.json holds. */
export interface TracingFile {
  when: string;
  node: string;
  cores: number;
  loadAverage: number[];
  lunationFrom: 'dist' | 'source' | 'mixed';
  versions: Record<string, string>;
  figures: TracingFigure[];
}

async function variant(name: Variant['name'], store: StoreKind, instrumentation?: Instrumentation) {
  const scratch = createScratch(
    process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    `tracing-${store}-${name}`,
  );
  const script = new Script(scratch.runPrefix);
  const harness = await createLunation({
    mode: 'generate',
    store,
    script,
    workDir: scratch.dir,
    redisUrl: scratch.redisUrl,
    redisKeyPrefix: `${scratch.prefix}:`,
    ...(instrumentation ? { instrumentation } : {}),
  });
  const result: Variant = { name, harness, script, scratch, perStepUs: [], cpuPerStepUs: [], runs: 0 };
  return result;
}

async function measure(store: StoreKind): Promise<TracingFigure> {
  const every = benchTracing('every');
  const sampledTracing = benchTracing('sampled');
  const off = await variant('off', store);
  const on = await variant('on', store, every.instrumentation);
  const sampled = await variant('sampled', store, sampledTracing.instrumentation);
  const all = [off, on, sampled];
  try {
    for (let round = 0; round < rounds; round++) {
      for (const current of round % 2 === 0 ? all : [...all].reverse()) {
        const before = current.script.toolExecutions;
        const timing = await timeRuns(() => current.harness.run(steps), plan);
        expectToolExecutions(current.script, before, timing.totalRuns, steps);
        current.perStepUs.push(timing.perRunUs.median / steps);
        current.cpuPerStepUs.push(timing.cpuPerRunUs.median / steps);
        current.runs += timing.totalRuns;
      }
    }
    await every.check(on.runs * spansPerRun(steps));
    await sampledTracing.check(0);
  } finally {
    await Promise.all(all.map((current) => current.harness.close()));
    await Promise.all(all.map((current) => current.scratch.dispose()));
    await Promise.all([every.shutdown(), sampledTracing.shutdown()]);
  }
  const offWall = stats(off.perStepUs).median;
  const onWall = stats(on.perStepUs).median;
  const offCpu = stats(off.cpuPerStepUs).median;
  const onCpu = stats(on.cpuPerStepUs).median;
  return {
    store,
    steps,
    rounds,
    off: { perStepUs: offWall, cpuPerStepUs: offCpu },
    on: { perStepUs: onWall, cpuPerStepUs: onCpu },
    sampled: {
      perStepUs: stats(sampled.perStepUs).median,
      cpuPerStepUs: stats(sampled.cpuPerStepUs).median,
    },
    overheadPercent: ((onWall - offWall) / offWall) * 100,
    cpuOverheadPercent: ((onCpu - offCpu) / offCpu) * 100,
    spansPerStep: every.exporter.spans / (on.runs * steps),
  };
}

const figures: TracingFigure[] = [];
for (const store of stores) {
  const figure = await measure(store);
  figures.push(figure);
  console.log(
    `${store}: off ${figure.off.perStepUs.toFixed(2)} µs/step, on ${figure.on.perStepUs.toFixed(2)} µs/step (${figure.overheadPercent.toFixed(1)} %; CPU ${figure.cpuOverheadPercent.toFixed(1)} %), 10 % sampled ${figure.sampled.perStepUs.toFixed(2)} µs/step, ${figure.spansPerStep.toFixed(2)} spans/step`,
  );
}
const loaded = lunationFrom();
const file: TracingFile = {
  when: new Date().toISOString(),
  node: process.version,
  cores: cpus().length,
  loadAverage: loadavg(),
  lunationFrom: loaded.from,
  versions: Object.fromEntries(
    ['@lunation/runtime', '@lunation/otel', '@opentelemetry/api', '@opentelemetry/sdk-trace'].map((name) => [
      name,
      packageVersion(name),
    ]),
  ),
  figures,
};
if (!values.smoke)
  writeFileSync(join(benchDir, 'results/w1-tracing.json'), `${JSON.stringify(file, null, 2)}\n`);
