import type { Scheduler, SimulatedProcess } from './scheduler.js';
import type { SeededRandom } from './seeded-random.js';

/** A doomed holder crashes as it issues one of its next this-many operations (drawn from 1). */
const mostOperations = 12;

/**
 * The holder whose claim a fault took away (a duplicate or prompt redelivery: another worker gets the thread while
 * this one may still be running it) dies soon after, with the profile's chance: as it issues one of its next few
 * operations (drawn), so mostly while its run still goes on. Its run is then the claim's new holder's to see to,
 * whatever that worker found in the store (seed 616's story: a submission acknowledged because its run was found
 * `running`, the holder then dead). Every draw from the stream `revoked-holder-crashes`; the crash itself is the
 * world's (`crash`: through the fault schedule, a new incarnation replacing the process).
 */
export class RevokedHolderCrashes {
  private readonly random: SeededRandom;
  /** Doomed processes, and how many more operations each issues before it crashes. */
  private readonly doomed = new Map<SimulatedProcess, number>();

  constructor(
    private readonly scheduler: Scheduler,
    private readonly chance: number,
    private readonly crash: (process: SimulatedProcess) => void,
  ) {
    this.random = scheduler.stream('revoked-holder-crashes');
    if (chance > 0) scheduler.watchOperations((owner) => this.watch(owner));
  }

  /** A fault took `holder`'s claim away. */
  revoked(holder: SimulatedProcess): void {
    if (this.random.chance(this.chance)) this.doomed.set(holder, this.random.int(1, mostOperations));
  }

  private watch(owner: SimulatedProcess): undefined {
    const left = this.doomed.get(owner);
    if (left === undefined) return undefined;
    if (left > 1) {
      this.doomed.set(owner, left - 1);
      return undefined;
    }
    this.doomed.delete(owner);
    // Next step, not inside the scheduler's call: the operation just issued vanishes with the process.
    this.scheduler.world.clock.setTimeout(() => this.crash(owner), 0);
    return undefined;
  }
}
