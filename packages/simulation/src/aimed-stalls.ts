import type { FaultSchedule } from './faults.js';
import type { Scheduler, SimulatedProcess } from './scheduler.js';
import type { SeededRandom } from './seeded-random.js';
import type { SimulatedStore } from './simulated-store.js';

/**
 * The operations a zombie's late write or late answer matters at, each with its weight (times the profile's
 * chance): a commit, a ledger begin or completion (rare, so always aimed at), the claim's extension, the inbox
 * read and acknowledgement a worker applies submissions by (frequent, so seldom).
 */
const aims: ReadonlyArray<readonly [prefix: string, weight: number]> = [
  ['store.commit ', 0.5],
  ['store.beginToolExecution ', 1],
  ['store.completeToolExecution', 1],
  ['dispatch.extend ', 0.2],
  ['dispatch.pending ', 0.05],
  ['dispatch.acknowledge ', 0.05],
];

/** The longest an aimed stall lasts when no other process takes the thread over. */
const longestStallMs = 120_000;

/** A process stalled at an aimed operation: the thread it touched, and the lease token issued for it then. */
interface Zombie {
  process: SimulatedProcess;
  threadId: string;
  token: number;
  /** Whether the store had the thread then (a thread gone since was deleted). */
  existed: boolean;
  /** When it resumes once the thread was taken over: drawn at the stall. */
  lateMs: number;
  resuming: boolean;
}

/**
 * Stalls aimed at the moments a zombie can do harm (the `stalls` profile's `aimedStall`): as a worker issues an
 * operation in {@link aims} on a thread, with the chance given times the operation's weight, it stalls either at
 * once — the operation applies only when it resumes: a write held back — or once the operation applied — its
 * answer waits, and reaches the process before or after the timers that fell due meanwhile (both drawn). The
 * process resumes when another process took the thread's lease (a later token) or the thread was deleted, after a
 * delay drawn up to 2^k ms, k from 0 to 16 (so the held write races every stage of the successor's recovery, from
 * its first read to the user's delete), or after two minutes at most. One aimed stall at a time; every draw from
 * the stream `aimed-stalls`, every stall through the fault schedule (`worker.aimed-stall`).
 */
export class AimedStalls {
  private readonly random: SeededRandom;
  private zombie: Zombie | undefined;

  constructor(
    private readonly scheduler: Scheduler,
    private readonly store: SimulatedStore,
    private readonly schedule: FaultSchedule,
    private readonly chance: number,
    /** Whether `process` is one of the world's live workers. */
    private readonly isWorker: (process: SimulatedProcess) => boolean,
    /** Stalls start only this long into the world. */
    private readonly windowMs: number,
  ) {
    this.random = scheduler.stream('aimed-stalls');
    if (chance > 0) scheduler.watchOperations((owner, label) => this.watch(owner, label));
  }

  /** True while `process` is in an aimed stall (the world then does not crash it: the zombie lives on). */
  holds(process: SimulatedProcess): boolean {
    return this.zombie?.process === process && process.stalled;
  }

  /** After every step: a zombie whose thread was taken over resumes after its drawn delay. */
  afterStep(): void {
    const zombie = this.zombie;
    if (zombie === undefined) return;
    if (!zombie.process.alive || !zombie.process.stalled) {
      this.zombie = undefined;
      return;
    }
    if (zombie.resuming) return;
    const slot = this.store.backend.leases.get(zombie.threadId);
    const deleted = zombie.existed && !this.store.backend.threads.has(zombie.threadId);
    if (!deleted && (slot?.highestToken ?? 0) <= zombie.token) return;
    zombie.resuming = true;
    zombie.process.resumeAt(this.scheduler.now() + zombie.lateMs);
  }

  private watch(process: SimulatedProcess, label: string): (() => boolean) | undefined {
    if (this.zombie !== undefined || process.stalled || !this.isWorker(process)) return undefined;
    const weight = aims.find(([prefix]) => label.startsWith(prefix))?.[1];
    const threadId = /thread-\d+/.exec(label)?.[0];
    if (weight === undefined || threadId === undefined || this.scheduler.elapsed() >= this.windowMs)
      return undefined;
    if (!this.random.chance(this.chance * weight)) return undefined;
    const answerHeld = this.random.chance(0.5);
    const answerFirst = this.random.chance(0.5);
    const lateMs = this.random.int(0, 2 ** this.random.int(0, 16));
    if (!this.schedule.allows('worker.aimed-stall')) return undefined;
    const stall = (): boolean => {
      if (this.zombie !== undefined || !process.alive || process.stalled) return answerFirst;
      const token = this.store.backend.leases.get(threadId)?.highestToken ?? 0;
      const existed = this.store.backend.threads.has(threadId);
      this.zombie = { process, threadId, token, existed, lateMs, resuming: false };
      process.stall(longestStallMs, `${answerHeld ? 'the answer of ' : ''}${label}`);
      return answerFirst;
    };
    if (answerHeld) return stall;
    stall();
    return undefined;
  }
}
