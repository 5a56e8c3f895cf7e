import { type BenchConfig, SMOKE } from '../config.js';
import type { AbWorkload } from './ab-args.js';
import type { CountWork } from './ab-child.js';

/**
 * The A/B mode's sizes for timed children: W1 as in the full run with fewer repetitions (a round runs every
 * workload on both sides), W2 with a shorter budget.
 */
export const AB_CONFIG: BenchConfig = {
  smoke: false,
  w1: {
    steps: [1, 10],
    timing: { warmupMs: 1000, warmupRuns: 300, warmupMaxMs: 6000, reps: 11, repMs: 100, minRunsPerRep: 3 },
    redisRoundTripRuns: 0,
  },
  w2: { runs: 1000, steps: 3, modelDelayMs: 20, warmupBatches: 1, minReps: 5, maxReps: 7, budgetMs: 4000 },
  w3: { threads: 0, concurrency: 0 },
};

/** One window of an instruction count: its work, the metric it counts for, and the units per run. */
export interface CountWindow extends CountWork {
  metric: string;
  /** The figure is instructions per (runs × per): steps per run for a per-step metric, runs per W2 batch. */
  per: number;
}

/** What one counted process does: a warm-up, then windows of work, each counted on its own. */
export interface CountPlan {
  warmup: CountWork[];
  windows: CountWindow[];
}

/**
 * The instruction-count plan of a workload: W1 one-step runs (per run) and ten-step runs (per step), twice each
 * after a warm-up of both; W2 batches of 1,000 concurrent runs (per run). Sized so that a process takes a few
 * minutes under callgrind on a busy machine; SQLite's steps cost about six times as many instructions, so it
 * runs fewer.
 */
export function countPlan(workload: AbWorkload, smoke: boolean): CountPlan {
  if (workload === 'w2') {
    const per = smoke ? SMOKE.w2.runs : AB_CONFIG.w2.runs;
    const steps = AB_CONFIG.w2.steps;
    const window: CountWindow = { metric: 'instructions/run', steps, runs: 1, per };
    return { warmup: [{ steps, runs: smoke ? 1 : 2 }], windows: smoke ? [window] : [window, window] };
  }
  const [oneStep, tenSteps] = smoke ? [3, 1] : workload.startsWith('w1:sqlite') ? [200, 40] : [500, 100];
  const one: CountWindow = { metric: 'S=1 instructions/run', steps: 1, runs: oneStep, per: 1 };
  const ten: CountWindow = { metric: 'S=10 instructions/step', steps: 10, runs: tenSteps, per: 10 };
  return {
    warmup: [
      { steps: 1, runs: oneStep },
      { steps: 10, runs: tenSteps * 2 },
    ],
    windows: smoke ? [one, ten] : [one, ten, one, ten],
  };
}

/** Each metric's instructions per unit from the windows' counts (in window order). */
export function countFigures(
  windows: readonly CountWindow[],
  instructions: readonly number[],
): Record<string, number> {
  if (instructions.length !== windows.length) {
    throw new Error(`Expected ${windows.length} counted windows, got ${instructions.length}`);
  }
  const totals = new Map<string, { instructions: number; units: number }>();
  windows.forEach((window, index) => {
    const total = totals.get(window.metric) ?? { instructions: 0, units: 0 };
    total.instructions += instructions[index] as number;
    total.units += window.runs * window.per;
    totals.set(window.metric, total);
  });
  return Object.fromEntries([...totals].map(([metric, total]) => [metric, total.instructions / total.units]));
}
