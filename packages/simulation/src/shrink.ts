import type { ScheduledFault } from './faults.js';
import type { WorldReport } from './inbox-world.js';

/** Runs one world with only the faults of `keep` injected (all the seed draws when undefined). */
export type WorldRun = (keep: ReadonlySet<number> | undefined) => Promise<WorldReport>;

/** Options of {@link shrinkFaults}. */
export interface ShrinkOptions {
  /** Give up refining after this many world runs. @default 300 */
  maxRuns?: number;
}

/** What {@link shrinkFaults} found: the smallest failing schedule it reached, and the run that shows it. */
export interface ShrinkResult {
  /** The faults still injected (ordinal and kind), the fewest that still fail the same way. */
  faults: ScheduledFault[];
  /** The failing run with only those faults. */
  report: WorldReport;
  /** How many faults the seed's full schedule injected. */
  from: number;
  /** World runs it took. */
  runs: number;
}

/**
 * What kind of failure a violation is, without the ids and numbers that change from run to run: a schedule
 * shrinks only while the same kind of failure is left.
 */
export function failureKind(violation: string): string {
  return violation
    .replace(/thread-\d+(-run-\d+)?/g, '<run>')
    .replace(/[0-9a-f]{8}-[0-9a-f-]{27,}/g, '<id>')
    .replace(/\d+/g, '#');
}

/**
 * Shrinks a failing seed's fault schedule (delta debugging, ddmin): the faults it injected are turned off in
 * ever smaller groups, keeping any smaller set with which the world still fails the same way (the same
 * {@link failureKind} of its first violation), until no single fault can go. The same seed with the same kept
 * set replays exactly (`pnpm simulate --seed N --keep a,b,c`).
 */
export async function shrinkFaults(run: WorldRun, options: ShrinkOptions = {}): Promise<ShrinkResult> {
  const maxRuns = options.maxRuns ?? 300;
  const full = await run(undefined);
  const first = full.violations[0];
  if (first === undefined) throw new Error(`seed ${full.seed} does not fail: nothing to shrink`);
  const kind = failureKind(first);
  let runs = 1;
  let best = { report: full, keep: full.injected.map((fault) => fault.ordinal) };
  const fails = async (keep: number[]): Promise<boolean> => {
    runs++;
    const report = await run(new Set(keep));
    const failed = report.violations[0] !== undefined && failureKind(report.violations[0]) === kind;
    // What was injected is what counts: ordinals kept but never drawn do nothing.
    if (failed) best = { report, keep: report.injected.map((fault) => fault.ordinal) };
    return failed;
  };
  if (best.keep.length > 0 && (await fails([]))) return result(best, full, runs);
  let granularity = 2;
  while (best.keep.length >= 2 && runs < maxRuns) {
    const current = best.keep;
    const size = Math.ceil(current.length / granularity);
    let reduced = false;
    for (let start = 0; start < current.length && runs < maxRuns; start += size) {
      const chunk = current.slice(start, start + size);
      const complement = current.filter((ordinal) => !chunk.includes(ordinal));
      if (chunk.length < current.length && (await fails(chunk))) {
        granularity = 2;
        reduced = true;
        break;
      }
      if (granularity > 2 && (await fails(complement))) {
        granularity = Math.max(granularity - 1, 2);
        reduced = true;
        break;
      }
    }
    if (reduced) continue;
    if (granularity >= current.length) break;
    granularity = Math.min(granularity * 2, current.length);
  }
  return result(best, full, runs);
}

function result(best: { report: WorldReport }, full: WorldReport, runs: number): ShrinkResult {
  return { faults: best.report.injected, report: best.report, from: full.injected.length, runs };
}
