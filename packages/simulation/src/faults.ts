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

/** Draws the fault of one call, and its extra delay. */
export function drawCallFault(
  random: SeededRandom,
  faults: CallFaults,
  write: boolean,
): { fault: CallFault; delayMs: number } {
  const delayMs = random.chance(faults.late ?? 0) ? random.int(1, faults.lateMs ?? 1_000) : 0;
  if (random.chance(faults.unavailable ?? 0)) return { fault: 'unavailable', delayMs };
  if (write && random.chance(faults.lostWrite ?? 0)) return { fault: 'lost-write', delayMs };
  if (write && random.chance(faults.unacknowledgedWrite ?? 0))
    return { fault: 'unacknowledged-write', delayMs };
  return { fault: 'none', delayMs };
}

/** How many faults of each kind a simulated part injected. */
export type FaultCounts = Record<string, number>;

/** Adds one to `counts[kind]`. */
export function countFault(counts: FaultCounts, kind: string): void {
  counts[kind] = (counts[kind] ?? 0) + 1;
}
