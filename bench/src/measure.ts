/** Median, min and max of a set of samples. */
export interface Stats {
  median: number;
  min: number;
  max: number;
  samples: number[];
}

export function stats(samples: number[]): Stats {
  if (samples.length === 0) throw new Error('no samples');
  const sorted = [...samples].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  const median =
    sorted.length % 2 === 1
      ? (sorted[middle] as number)
      : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
  return { median, min: sorted[0] as number, max: sorted.at(-1) as number, samples };
}

const collect = (globalThis as { gc?: () => void }).gc;

/** True when the process runs with `--expose-gc`. */
export const canCollect = typeof collect === 'function';

/** A full garbage collection, twice (weak references and finalizers settle on the second). */
export function fullGc(): void {
  if (!collect) return;
  collect();
  collect();
}

export interface MemorySample {
  rss: number;
  heapUsed: number;
  external: number;
}

export function memory(): MemorySample {
  const usage = process.memoryUsage();
  return { rss: usage.rss, heapUsed: usage.heapUsed, external: usage.external + usage.arrayBuffers };
}

export interface TimingPlan {
  /** Warm-up lasts at least this long... */
  warmupMs: number;
  /** ...and at least this many runs (so slow frameworks get their JIT warm too)... */
  warmupRuns: number;
  /** ...unless that takes longer than this. */
  warmupMaxMs: number;
  /** Timed repetitions. */
  reps: number;
  /** Each repetition runs for about this long (the batch size is calibrated from the warm-up)... */
  repMs: number;
  /** ...with at least this many runs. */
  minRunsPerRep: number;
}

export interface Timing {
  /** Microseconds per run: median, min and max over the repetitions. */
  perRunUs: Stats;
  /** CPU microseconds of this process (all its threads) per run; less affected by other processes than wall time. */
  cpuPerRunUs: Stats;
  runsPerRep: number;
  /** Runs made, warm-up included. */
  totalRuns: number;
}

/**
 * Warms up, then times `reps` back-to-back batches of sequential runs; each sample is the mean µs per run of one
 * batch, garbage collection included as it falls.
 */
export async function timeRuns(run: () => Promise<void>, plan: TimingPlan): Promise<Timing> {
  let totalRuns = 0;
  const warmStart = performance.now();
  const warm = () => {
    const elapsed = performance.now() - warmStart;
    return elapsed >= plan.warmupMaxMs || (totalRuns >= plan.warmupRuns && elapsed >= plan.warmupMs);
  };
  while (!warm()) {
    await run();
    totalRuns++;
  }
  const estimateMs = totalRuns > 0 ? (performance.now() - warmStart) / totalRuns : Number.POSITIVE_INFINITY;
  const runsPerRep = Math.max(plan.minRunsPerRep, Math.round(plan.repMs / estimateMs) || 0);
  const samples: number[] = [];
  const cpuSamples: number[] = [];
  // No forced GC between repetitions: after one, V8 shrinks the young generation and the next runs scavenge far
  // more often (twice as slow for allocation-heavy code), which would measure the harness, not the framework.
  for (let rep = 0; rep < plan.reps; rep++) {
    const cpu = process.cpuUsage();
    const start = performance.now();
    for (let index = 0; index < runsPerRep; index++) await run();
    samples.push(((performance.now() - start) * 1000) / runsPerRep);
    const used = process.cpuUsage(cpu);
    cpuSamples.push((used.user + used.system) / runsPerRep);
    totalRuns += runsPerRep;
  }
  return { perRunUs: stats(samples), cpuPerRunUs: stats(cpuSamples), runsPerRep, totalRuns };
}

/** Runs `count` jobs with at most `concurrency` in flight. */
export async function pool(count: number, concurrency: number, job: (index: number) => Promise<void>) {
  let next = 0;
  const worker = async () => {
    while (next < count) await job(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}
