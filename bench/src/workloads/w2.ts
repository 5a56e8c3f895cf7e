import type { BenchConfig } from '../config.js';
import { FRAMEWORKS } from '../frameworks/index.js';
import { fullGc, type MemorySample, memory, type Stats, stats } from '../measure.js';
import type { Task } from '../results.js';
import { expectToolExecutions, Script } from '../script.js';
import type { Scratch } from './scratch.js';

export interface W2Measurement {
  wallMs: Stats;
  memory: { baseline: MemorySample; inFlight: MemorySample; rssPerRunBytes: number; heapPerRunBytes: number };
}

/**
 * W2: `runs` concurrent runs of S steps; the model awaits a timer on every call. First (in a fresh process) the
 * memory of the runs in flight: after a small warm-up and a full GC, a baseline; then every run is held in its
 * last model call until all are there, GC, and a second sample. Then wall time over several batches.
 */
export async function runW2(
  task: Extract<Task, { kind: 'w2' }>,
  config: BenchConfig,
  scratch: Scratch,
): Promise<W2Measurement> {
  const { runs, steps, modelDelayMs } = config.w2;
  const create = await FRAMEWORKS[task.framework].load();
  const script = new Script(scratch.runPrefix, modelDelayMs);
  const harness = await create({
    mode: task.mode,
    store: task.store ?? 'none',
    script,
    workDir: scratch.dir,
    redisUrl: scratch.redisUrl,
    redisKeyPrefix: `${scratch.prefix}:`,
  });
  const batch = async (size: number): Promise<number> => {
    const before = script.toolExecutions;
    const start = performance.now();
    await Promise.all(Array.from({ length: size }, () => harness.run(steps)));
    const wall = performance.now() - start;
    expectToolExecutions(script, before, size, steps);
    return wall;
  };
  try {
    await batch(Math.min(50, runs));
    fullGc();
    const baseline = memory();
    let inFlight: MemorySample | undefined;
    script.holdRuns(runs, steps, () => {
      fullGc();
      inFlight = memory();
    });
    await batch(runs);
    if (!inFlight) throw new Error('the memory sample was never taken');
    const sample: MemorySample = inFlight;
    for (let index = 0; index < config.w2.warmupBatches; index++) await batch(runs);
    const walls: number[] = [];
    const started = performance.now();
    const { minReps, maxReps, budgetMs } = config.w2;
    while (walls.length < maxReps && (walls.length < minReps || performance.now() - started < budgetMs)) {
      walls.push(await batch(runs));
    }
    if (script.openRuns !== 0) throw new Error(`${script.openRuns} runs were never checked`);
    return {
      wallMs: stats(walls),
      memory: {
        baseline,
        inFlight: sample,
        rssPerRunBytes: (sample.rss - baseline.rss) / runs,
        heapPerRunBytes: (sample.heapUsed - baseline.heapUsed) / runs,
      },
    };
  } finally {
    await harness.close();
  }
}
