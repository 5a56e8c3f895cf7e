import { stats } from '../measure.js';

/** One round's figure of a metric on each side. */
export interface AbPair {
  base: number;
  head: number;
}

/** head/base over the rounds: the median of the per-round ratios, their range and a bootstrap interval. */
export interface RatioSummary {
  /** head/base of each round, in round order. */
  ratios: number[];
  median: number;
  min: number;
  max: number;
  /** A 95 % bootstrap interval of the median ratio (percentile method, seeded: the same input gives the same interval). */
  low: number;
  high: number;
  /** The median of each side's figures over the rounds. */
  baseMedian: number;
  headMedian: number;
}

/** A small seeded generator (mulberry32), so that an interval can be reproduced from the figures. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

/** The `confidence` percentile bootstrap interval of the median of `values`. */
export function bootstrapMedianInterval(
  values: readonly number[],
  options: { resamples?: number; confidence?: number; seed?: number } = {},
): { low: number; high: number } {
  if (values.length === 0) throw new RangeError('bootstrapMedianInterval: no values');
  const { resamples = 2000, confidence = 0.95, seed = 1 } = options;
  const next = random(seed);
  const medians: number[] = new Array(resamples);
  const sample: number[] = new Array(values.length);
  for (let resample = 0; resample < resamples; resample++) {
    for (let index = 0; index < values.length; index++) {
      sample[index] = values[Math.floor(next() * values.length)] as number;
    }
    medians[resample] = stats(sample).median;
  }
  medians.sort((a, b) => a - b);
  const tail = (1 - confidence) / 2;
  const at = (quantile: number) =>
    medians[Math.min(resamples - 1, Math.max(0, Math.round(quantile * (resamples - 1))))] as number;
  return { low: at(tail), high: at(1 - tail) };
}

/** head/base per round and its summary; every figure must be a positive number. */
export function summarizeRatios(pairs: readonly AbPair[]): RatioSummary {
  if (pairs.length === 0) throw new RangeError('summarizeRatios: no rounds');
  for (const { base, head } of pairs) {
    if (!(base > 0) || !(head > 0) || !Number.isFinite(base) || !Number.isFinite(head)) {
      throw new RangeError(
        `summarizeRatios: figures must be positive and finite, got base ${base}, head ${head}`,
      );
    }
  }
  const ratios = pairs.map(({ base, head }) => head / base);
  const ratioStats = stats(ratios);
  const { low, high } = bootstrapMedianInterval(ratios);
  return {
    ratios,
    median: ratioStats.median,
    min: ratioStats.min,
    max: ratioStats.max,
    low,
    high,
    baseMedian: stats(pairs.map((pair) => pair.base)).median,
    headMedian: stats(pairs.map((pair) => pair.head)).median,
  };
}

/**
 * What a summary says of head against base (every metric is lower-is-better): `lower` or `higher` only when
 * every round says so; otherwise the rounds show no difference.
 */
export function verdict(summary: Pick<RatioSummary, 'min' | 'max'>): 'lower' | 'higher' | 'within spread' {
  if (summary.max < 1) return 'lower';
  if (summary.min > 1) return 'higher';
  return 'within spread';
}

/** The instructions of one callgrind dump (its `totals:` line, or `summary:` in older formats). */
export function parseDumpTotal(dump: string): number {
  const match = /^(?:totals|summary): (\d+)/m.exec(dump);
  if (!match) throw new Error(`A callgrind dump without a totals line: ${dump.slice(0, 500)}`);
  return Number(match[1]);
}
