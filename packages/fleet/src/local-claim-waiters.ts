import type { Clock, ClockTimer } from '@lunation/contract';
import type { ClaimWaiter } from './local-thread-slot.js';

/** The claim calls waiting for a thread, oldest first, and the one timer that serves them when something is due. */
export class LocalClaimWaiters {
  private readonly waiters: ClaimWaiter[] = [];
  private timer: ClockTimer | undefined;
  private timerDue = Number.POSITIVE_INFINITY;

  /** `serve` is called with the time when the timer fires. */
  constructor(
    private readonly clock: Clock,
    private readonly serve: (now: number) => void,
  ) {}

  get size(): number {
    return this.waiters.length;
  }

  /** The oldest waiting claim. */
  get first(): ClaimWaiter | undefined {
    return this.waiters[0];
  }

  add(waiter: ClaimWaiter): void {
    this.waiters.push(waiter);
  }

  /** Removes a waiting claim; false when it was not waiting (already served). */
  remove(waiter: ClaimWaiter): boolean {
    const index = this.waiters.indexOf(waiter);
    if (index < 0) return false;
    this.waiters.splice(index, 1);
    return true;
  }

  /** Waiting claims of one dispatcher instance, removed. */
  takeOf(owner: object): ClaimWaiter[] {
    const taken = this.waiters.filter((waiter) => waiter.owner === owner);
    for (const waiter of taken) this.remove(waiter);
    return taken;
  }

  /** Sets the timer for `due` (a delay or a lock running out) while claims wait; clears it when none do. */
  arm(now: number, due: number): void {
    if (this.waiters.length === 0) {
      this.clock.clearTimeout(this.timer);
      this.timer = undefined;
      this.timerDue = Number.POSITIVE_INFINITY;
      return;
    }
    if (due === Number.POSITIVE_INFINITY || (this.timer !== undefined && this.timerDue <= due)) return;
    this.clock.clearTimeout(this.timer);
    this.timerDue = due;
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.timerDue = Number.POSITIVE_INFINITY;
        this.serve(this.clock.now());
      },
      Math.max(0, due - now + 1),
    );
  }
}
