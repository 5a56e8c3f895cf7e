import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BenchConfig, SMOKE } from '../config.js';
import { createLunation } from '../frameworks/lunation.js';
import type { Mode, StoreKind } from '../harness.js';
import { type Timing, timeRuns } from '../measure.js';
import { expectToolExecutions, Script } from '../script.js';
import type { Scratch } from '../workloads/scratch.js';
import { runW2 } from '../workloads/w2.js';
import type { AbWorkload } from './ab-args.js';
import type { AbChildRequest, CountWork } from './ab-child.js';
import { AB_CONFIG } from './ab-config.js';

/** The store and mode of a W1 workload id. */
export function w1Variant(workload: AbWorkload): { store: StoreKind; mode: Mode } {
  const [kind, store, mode = 'generate'] = workload.split(':');
  if (kind !== 'w1' || !store) throw new Error(`${workload} is not a W1 workload`);
  return { store: store as StoreKind, mode: mode as Mode };
}

/**
 * A temp directory for the SQLite file and unique run keys. The A/B workloads use neither Redis nor PostgreSQL,
 * so a child loads neither client (the bench's shared scratch cleans up after both).
 */
function abScratch(): Scratch {
  const dir = mkdtempSync(join(tmpdir(), 'lunation-bench-ab-data-'));
  const id = randomBytes(4).toString('hex');
  return {
    dir,
    prefix: `lunation-bench-ab:${id}`,
    runPrefix: `t${id}-`,
    redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    async dispose() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Opens the Lunation harness of a workload. */
function openHarness(store: StoreKind, mode: Mode, script: Script, scratch: Scratch) {
  return createLunation({
    mode,
    store,
    script,
    workDir: scratch.dir,
    redisUrl: scratch.redisUrl,
    redisKeyPrefix: `${scratch.prefix}:`,
  });
}

/** W1 as `runW1` times it (sequential runs of each S, warm-up first), every run checked. */
async function timeW1(store: StoreKind, mode: Mode, config: BenchConfig, scratch: Scratch) {
  const script = new Script(scratch.runPrefix);
  const harness = await openHarness(store, mode, script, scratch);
  try {
    const timings: Record<string, Timing> = {};
    for (const steps of config.w1.steps) {
      const before = script.toolExecutions;
      const timing = await timeRuns(() => harness.run(steps), config.w1.timing);
      expectToolExecutions(script, before, timing.totalRuns, steps);
      timings[String(steps)] = timing;
    }
    if (script.openRuns !== 0) throw new Error(`${script.openRuns} runs were never checked`);
    return timings;
  } finally {
    await harness.close();
  }
}

/**
 * Runs one workload of an A/B child in this process. `time`: figures by metric (W1: µs per one-step run and
 * µs per step at S=10, wall and CPU; W2: the wall time of a batch of 1,000 runs, ms, and CPU µs per run).
 * `count`: the warm-up and the windows of work only, nothing measured here (callgrind counts the instructions).
 */
export async function runAbWorkload(request: AbChildRequest): Promise<Record<string, number>> {
  const config = request.smoke ? SMOKE : AB_CONFIG;
  const scratch = abScratch();
  try {
    if (request.kind === 'count') {
      if (!request.count) throw new Error('A count request needs its sizes');
      await countWork(request.workload, request.count, config, scratch);
      return {};
    }
    if (request.workload === 'w2') {
      const cpu = process.cpuUsage();
      const measured = await runW2({ kind: 'w2', framework: 'lunation', mode: 'generate' }, config, scratch);
      const used = process.cpuUsage(cpu);
      // runW2's runs: a warm-up batch of min(50, runs), the memory batch, the warm-up batches, the timed ones.
      const { runs, warmupBatches } = config.w2;
      const totalRuns = Math.min(50, runs) + runs * (1 + warmupBatches + measured.wallMs.samples.length);
      return {
        'batch wall ms': measured.wallMs.median,
        'CPU µs/run': (used.user + used.system) / totalRuns,
        'heap KB/run in flight': measured.memory.heapPerRunBytes / 1024,
      };
    }
    const { store, mode } = w1Variant(request.workload);
    const timings = await timeW1(store, mode, config, scratch);
    const figures: Record<string, number> = {};
    for (const [steps, timing] of Object.entries(timings)) {
      const perStep = steps !== '1';
      const label = perStep ? `S=${steps} µs/step` : 'S=1 µs/run';
      const divisor = perStep ? Number(steps) : 1;
      figures[`${label} wall`] = timing.perRunUs.median / divisor;
      figures[`${label} CPU`] = timing.cpuPerRunUs.median / divisor;
    }
    return figures;
  } finally {
    await scratch.dispose();
  }
}

/** Marks a window's edge for callgrind, which dumps its counters when `uv_os_getpriority` is entered. */
function markWindow(): void {
  getPriority();
}

async function countWork(
  workload: AbWorkload,
  count: NonNullable<AbChildRequest['count']>,
  config: BenchConfig,
  scratch: Scratch,
): Promise<void> {
  const w2 = workload === 'w2';
  const { store, mode } = w2 ? { store: 'none' as const, mode: 'generate' as const } : w1Variant(workload);
  const script = new Script(scratch.runPrefix, w2 ? config.w2.modelDelayMs : 0);
  const harness = await openHarness(store, mode, script, scratch);
  const work = async ({ steps, runs }: CountWork) => {
    for (let index = 0; index < runs; index++) {
      if (w2) await Promise.all(Array.from({ length: config.w2.runs }, () => harness.run(steps)));
      else await harness.run(steps);
    }
  };
  try {
    for (const item of count.warmup) await work(item);
    markWindow();
    for (const window of count.windows) {
      await work(window);
      markWindow();
    }
    if (script.openRuns !== 0) throw new Error(`${script.openRuns} runs were never checked`);
  } finally {
    await harness.close();
  }
}
