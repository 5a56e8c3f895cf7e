import type { SeededRandom } from './seeded-random.js';

/**
 * Faults injected into the calls of a simulated part, each a probability per call (0, the default, never
 * injects and never draws). Every fault answers the caller with an error except `late`.
 */
export interface CallFaults {
  /** A write lost before it applies: nothing changes, the caller gets `store-unavailable`. */
  lostWrite?: number;
  /** A write that applies but whose answer is lost: the caller gets `store-unavailable` (the ambiguous commit). */
  unacknowledgedWrite?: number;
  /** Any call refused with `store-unavailable` before it applies. */
  unavailable?: number;
  /** A late answer: the call completes up to `lateMs` virtual ms later than it would. */
  late?: number;
  /** The longest extra delay of a `late` answer. @default 1000 */
  lateMs?: number;
}

/** What a fault draw decided for one call. */
export type CallFault = 'none' | 'lost-write' | 'unacknowledged-write' | 'unavailable';

/**
 * Draws the fault of one call, and its extra delay. Each fault drawn is put to `allow` (a
 * {@link FaultSchedule}'s, under its kind): one it refuses is not injected, and the draws go on as if it were, so
 * the seed's other choices stay where they were.
 */
export function drawCallFault(
  random: SeededRandom,
  faults: CallFaults,
  write: boolean,
  allow: (kind: string) => boolean = () => true,
): { fault: CallFault; delayMs: number } {
  const late = random.chance(faults.late ?? 0) ? random.int(1, faults.lateMs ?? 1_000) : 0;
  const delayMs = late > 0 && allow('late') ? late : 0;
  const fault = drawFailure(random, faults, write);
  return { fault: fault === 'none' || allow(fault) ? fault : 'none', delayMs };
}

function drawFailure(random: SeededRandom, faults: CallFaults, write: boolean): CallFault {
  if (random.chance(faults.unavailable ?? 0)) return 'unavailable';
  if (write && random.chance(faults.lostWrite ?? 0)) return 'lost-write';
  if (write && random.chance(faults.unacknowledgedWrite ?? 0)) return 'unacknowledged-write';
  return 'none';
}

/** One fault the seed drew and the schedule injected. */
export interface ScheduledFault {
  /** Its place among every fault the seed drew in this run (1, 2, …), injected or not. */
  ordinal: number;
  /** What it was: `store.lost-write`, `dispatch.duplicate-delivery`, `crash`, … */
  kind: string;
}

/**
 * The fault schedule of one world run: every fault the seed draws (a crash, a lost write, a duplicate
 * delivery, …) is numbered in the order drawn and put to the schedule, which injects it unless it was turned
 * off. With no `keep` set every fault is injected (the seed's full schedule); with one, only the ordinals in it
 * are. The same seed and the same `keep` give the same run, so a failing seed can be shrunk to the fewest faults
 * that still fail (see `shrinkFaults`).
 */
export class FaultSchedule {
  /** The faults injected, in order. */
  readonly injected: ScheduledFault[] = [];
  private drawn = 0;

  /**
   * @param keep the ordinals to inject (a shrunk schedule); every one when undefined
   * @param until faults drawn once this says the chaos is over are not injected (the world is left to recover)
   */
  constructor(
    private readonly keep?: ReadonlySet<number>,
    private readonly until?: () => boolean,
  ) {}

  /** True when the fault of `kind` the seed just drew is to be injected (and records it). */
  allows(kind: string): boolean {
    const ordinal = ++this.drawn;
    if (this.keep !== undefined && !this.keep.has(ordinal)) return false;
    if (this.until?.() === true) return false;
    this.injected.push({ ordinal, kind });
    return true;
  }

  /** How many faults the seed drew, injected or not. */
  get drawnCount(): number {
    return this.drawn;
  }
}

/** How many faults of each kind a simulated part injected. */
export type FaultCounts = Record<string, number>;

/** Adds one to `counts[kind]`. */
export function countFault(counts: FaultCounts, kind: string): void {
  counts[kind] = (counts[kind] ?? 0) + 1;
}
