import {
  type CallFault,
  type CallFaults,
  countFault,
  drawCallFault,
  type FaultCounts,
  FaultSchedule,
} from './faults.js';
import type { Scheduler } from './scheduler.js';
import type { SeededRandom } from './seeded-random.js';

/** Faults of a {@link SimulatedDispatcher}: those of every call, plus the engine's own misdeeds. */
export interface DispatchFaults extends CallFaults {
  /**
   * A claim taken away from its holder without telling it, some time within its lock, as an engine does when it
   * wrongly judges a worker stalled: the thread is delivered again to another worker (the holder's `extend`,
   * `complete`, ... then get `claim-lost`).
   */
  duplicateDelivery?: number;
  /** A claim made in the backend whose answer is lost: the caller sees no thread; the lock runs out. */
  lostClaim?: number;
  /** An `acknowledge` lost before it applies: the caller gets `store-unavailable`, the submissions stay. */
  lostAcknowledgement?: number;
  /**
   * An `appendEvents` refused with `store-unavailable` before it applies (a log's backend timing out under load).
   * Drawn from a stream of its own, so turning it on shifts none of the seed's other faults.
   */
  failedAppend?: number;
  /**
   * A duplicate delivery within `promptRedeliveryMs` of the claim (default 50 ms): the thread goes to another worker
   * while its holder is most likely still running it. Drawn from a stream of its own, like `failedAppend`.
   */
  promptRedelivery?: number;
  /** @default 50 */
  promptRedeliveryMs?: number;
}

/** The dispatcher operations that write: only these can lose a write or apply it unacknowledged. */
const writes = new Set([
  'submit',
  'extend',
  'acknowledge',
  'complete',
  'fail',
  'handBack',
  'resubmit',
  'requestCancel',
  'clearCancel',
  'appendEvents',
  'endEvents',
]);

/**
 * The faults one simulated dispatcher draws, from the seed's streams, each put to the world's fault schedule and
 * counted when injected. Every draw is made whether or not the schedule injects it, so turning a fault off
 * shifts no other draw.
 */
export class DispatchFaultDraws {
  private readonly random: SeededRandom;
  private readonly appendRandom: SeededRandom;
  private readonly redeliveryRandom: SeededRandom;

  constructor(
    scheduler: Scheduler,
    readonly faults: DispatchFaults = {},
    readonly counts: FaultCounts = {},
    readonly schedule: FaultSchedule = new FaultSchedule(),
  ) {
    this.random = scheduler.stream('dispatch-faults');
    this.appendRandom = scheduler.stream('dispatch-append-faults');
    this.redeliveryRandom = scheduler.stream('dispatch-redelivery-faults');
  }

  /** The same schedule and counts, with other faults (a sibling's). */
  with(faults: DispatchFaults, scheduler: Scheduler): DispatchFaultDraws {
    return new DispatchFaultDraws(scheduler, faults, this.counts, this.schedule);
  }

  /** The fault and extra latency of one call of operation `kind`. */
  call(kind: string): { fault: CallFault; delayMs: number } {
    return drawCallFault(this.random, this.faults, writes.has(kind), (drawn) => this.inject(drawn));
  }

  /** Drawn when a claim is issued: whether its answer is lost (injected only once it holds a thread). */
  lostClaim(): boolean {
    return this.random.chance(this.faults.lostClaim ?? 0);
  }

  lostAcknowledgement(): boolean {
    return this.random.chance(this.faults.lostAcknowledgement ?? 0) && this.inject('lost-acknowledgement');
  }

  failedAppend(): boolean {
    return this.appendRandom.chance(this.faults.failedAppend ?? 0) && this.inject('failed-append');
  }

  /** With a duplicate-delivery fault for a claim of `lockMs`: in how many ms its claim is taken away. */
  revocation(lockMs: number): number | undefined {
    if (this.redeliveryRandom.chance(this.faults.promptRedelivery ?? 0)) {
      const delayMs = this.redeliveryRandom.int(
        0,
        Math.min(lockMs - 1, this.faults.promptRedeliveryMs ?? 50),
      );
      return this.inject('prompt-redelivery') ? delayMs : undefined;
    }
    if (!this.random.chance(this.faults.duplicateDelivery ?? 0) || !this.inject('duplicate-delivery')) return;
    return this.random.int(0, lockMs - 1);
  }

  /** Puts a drawn fault to the schedule; counts it when injected. */
  inject(kind: string): boolean {
    if (!this.schedule.allows(`dispatch.${kind}`)) return false;
    countFault(this.counts, kind);
    return true;
  }
}
