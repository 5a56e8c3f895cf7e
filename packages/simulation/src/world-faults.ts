import { LunationError } from '@lunation/contract';
import type { FaultSchedule } from './faults.js';
import type { Scheduler } from './scheduler.js';
import type { SeededRandom } from './seeded-random.js';

/**
 * Faults of the runtime world's worker processes and of the models and tools they call, each a probability (0,
 * the default, never draws). Each is drawn from a stream of its own and put to the world's `FaultSchedule`, so a
 * failing seed shrinks over them like any other fault.
 */
export interface WorkerFaults {
  /**
   * Chance, after a step in which a live worker holds a thread's lease, that one such worker stalls for one to two leases' time to live and then resumes (the
   * zombie): its pending calls and timers wait; its lease and claim lapse meanwhile.
   */
  stall?: number;
  /**
   * Chance, as a worker issues a commit, a ledger begin or completion, a claim extension or an inbox read or
   * acknowledgement, that it stalls right there — the write held back, or its answer — until another process took
   * the thread over (see `AimedStalls`).
   */
  aimedStall?: number;
  /** The largest skew of a worker's clock, drawn per incarnation between `-skewMs` and `skewMs`. @default 0 */
  skewMs?: number;
  /** Per model attempt: a retryable `provider-error`. */
  modelError?: number;
  /** Per model attempt: an answer up to `slowModelMs` late. */
  modelSlow?: number;
  /** Per model attempt: no answer at all (the stream's idle timeout ends the attempt). */
  modelHang?: number;
  /** Per tool attempt: the tool throws before its effect. */
  toolThrow?: number;
  /** Per tool attempt: the tool hangs before its effect until its signal aborts (its timeout). */
  toolHang?: number;
  /** Per tool attempt: after its effect the tool ignores its signal and keeps the call busy past its timeout. */
  toolIgnoresSignal?: number;
}

/** Stalls start only within this much virtual time of the world's start: liveness is judged once they stopped. */
export const stallWindowMs = 120_000;
/** How long a stalled worker stands still, at least: a lease's time to live (the zombie outlives its lease). */
export const stallBaseMs = 30_000;
/** The longest extra lateness of a slow model answer. */
export const slowModelMs = 15_000;
/** The world's model attempts give up after this long without a part (`streamWithRetries`' idle timeout). */
export const modelIdleTimeoutMs = 10_000;
/** The world's tools time out after this long; a hung one is aborted then. */
export const toolTimeoutMs = 5_000;

/** What one model attempt does, as the seed draws it. */
export type ModelFault = 'none' | 'error' | 'slow' | 'hang';
/** What one tool attempt does, as the seed draws it. */
export type ToolFault = 'none' | 'throw' | 'hang' | 'ignore-signal';

/** Draws the worker faults of one world from their own streams, through the world's fault schedule. */
export class WorkerFaultDraws {
  private readonly stalls: SeededRandom;
  private readonly skews: SeededRandom;
  private readonly models: SeededRandom;
  private readonly tools: SeededRandom;

  constructor(
    scheduler: Scheduler,
    private readonly faults: WorkerFaults,
    private readonly schedule: FaultSchedule,
  ) {
    this.stalls = scheduler.stream('worker-stalls');
    this.skews = scheduler.stream('worker-skew');
    this.models = scheduler.stream('model-faults');
    this.tools = scheduler.stream('tool-faults');
  }

  /** How long a worker stalls after this step (`elapsedMs` into the world): 0 for no stall. */
  stall(elapsedMs: number): number {
    if (elapsedMs >= stallWindowMs || !this.stalls.chance(this.faults.stall ?? 0)) return 0;
    const ms = stallBaseMs + this.stalls.int(1, stallBaseMs);
    return this.schedule.allows('worker.stall') ? ms : 0;
  }

  /** The clock skew of a new worker incarnation. */
  skew(): number {
    const most = this.faults.skewMs ?? 0;
    if (most <= 0) return 0;
    const skewMs = this.skews.int(-most, most);
    return skewMs !== 0 && this.schedule.allows('worker.skew') ? skewMs : 0;
  }

  /** What the next model attempt does, and how late a slow one answers. */
  model(): { fault: ModelFault; delayMs: number } {
    const { models, faults } = this;
    const fault = firstFault<ModelFault>(models, [
      ['error', faults.modelError],
      ['hang', faults.modelHang],
      ['slow', faults.modelSlow],
    ]);
    const delayMs = fault === 'slow' ? models.int(1, slowModelMs) : 0;
    if (fault === 'none' || !this.schedule.allows(`model.${fault}`)) return { fault: 'none', delayMs: 0 };
    return { fault, delayMs };
  }

  /** What the next tool attempt does. */
  tool(): ToolFault {
    const { tools, faults } = this;
    const fault = firstFault<ToolFault>(tools, [
      ['throw', faults.toolThrow],
      ['hang', faults.toolHang],
      ['ignore-signal', faults.toolIgnoresSignal],
    ]);
    return fault === 'none' || !this.schedule.allows(`tool.${fault}`) ? 'none' : fault;
  }
}

/** The error a faulty model attempt fails with: retryable, as a provider's 503 is. */
export function modelFailure(): LunationError {
  return new LunationError('provider-error', 'Simulated fault: the model provider failed; retry', {
    retryable: true,
    details: { simulated: true },
  });
}

/** The error a faulty tool throws. */
export function toolFailure(name: string): LunationError {
  return new LunationError('tool-execution-failed', `Simulated fault: tool ${name} threw`, {
    details: { simulated: true },
  });
}

/**
 * The first fault whose chance comes up, drawn in order from `random` (a draw only when every one before it
 * missed), or `'none'`.
 */
function firstFault<Fault extends string>(
  random: SeededRandom,
  chances: ReadonlyArray<readonly [Exclude<Fault, 'none'>, number | undefined]>,
): Fault | 'none' {
  for (const [fault, chance] of chances) if (random.chance(chance ?? 0)) return fault;
  return 'none';
}
