import type { TimingPlan } from './measure.js';

export interface BenchConfig {
  smoke: boolean;
  w1: { steps: number[]; timing: TimingPlan; redisRoundTripRuns: number };
  /** Timed batches stop after `maxReps`, or after `minReps` once `budgetMs` is spent. */
  w2: {
    runs: number;
    steps: number;
    modelDelayMs: number;
    warmupBatches: number;
    minReps: number;
    maxReps: number;
    budgetMs: number;
  };
  w3: { threads: number; concurrency: number };
}

export const FULL: BenchConfig = {
  smoke: false,
  w1: {
    steps: [1, 10],
    timing: { warmupMs: 1500, warmupRuns: 300, warmupMaxMs: 8000, reps: 15, repMs: 100, minRunsPerRep: 3 },
    redisRoundTripRuns: 20,
  },
  w2: { runs: 1000, steps: 3, modelDelayMs: 20, warmupBatches: 1, minReps: 3, maxReps: 9, budgetMs: 15_000 },
  w3: { threads: 10_000, concurrency: 32 },
};

/** A few iterations of everything at tiny sizes, with the same checks. */
export const SMOKE: BenchConfig = {
  smoke: true,
  w1: {
    steps: [1, 10],
    timing: { warmupMs: 0, warmupRuns: 2, warmupMaxMs: 10_000, reps: 2, repMs: 0, minRunsPerRep: 2 },
    redisRoundTripRuns: 2,
  },
  w2: { runs: 50, steps: 3, modelDelayMs: 20, warmupBatches: 1, minReps: 1, maxReps: 1, budgetMs: 0 },
  w3: { threads: 100, concurrency: 16 },
};
