import type { Job, Worker } from 'bullmq';
import type { DispatchContext } from './dispatch-context.js';

/** A claim call waiting for a job. */
interface GateWaiter {
  settle(job: Job | undefined): void;
}

/**
 * Lets many claim calls of one dispatcher wait for jobs through BullMQ's single blocking fetch. One pump at a
 * time blocks on the worker's connection (`getNextJob` with `block: true`, woken by BullMQ's marker as soon as a
 * job is added, or when a delayed job falls due) and hands each job it gets to the longest-waiting claim; a job
 * that arrives when no claim waits any more goes straight back to the front of the queue.
 */
export class ClaimGate {
  private readonly waiters: GateWaiter[] = [];
  private pumping = false;
  private closed = false;

  constructor(
    private readonly worker: Worker,
    private readonly context: Pick<DispatchContext, 'clock' | 'ids' | 'reportError'>,
  ) {}

  /** A fetch token: the lock value of the job it gets, and so the claim's token. */
  private token(): string {
    return this.context.ids.id();
  }

  /** Takes a waiting job now, without blocking, or undefined. */
  async fetchNow(): Promise<Job | undefined> {
    if (this.closed) return undefined;
    const token = this.token();
    const job = await this.worker.getNextJob(token, { block: false });
    if (job === undefined) return undefined;
    job.token = token;
    return job;
  }

  /** Waits for a job until `deadline` (epoch ms) or the signal; resolves undefined then. */
  wait(deadline: number, signal: AbortSignal | undefined): Promise<Job | undefined> {
    if (this.closed || signal?.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const giveUp = () => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) {
          this.waiters.splice(index, 1);
          waiter.settle(undefined);
        }
      };
      const { clock } = this.context;
      const timer = clock.setTimeout(giveUp, Math.max(0, deadline - clock.now()));
      const waiter: GateWaiter = {
        settle(job) {
          clock.clearTimeout(timer);
          signal?.removeEventListener('abort', giveUp);
          resolve(job);
        },
      };
      signal?.addEventListener('abort', giveUp, { once: true });
      this.waiters.push(waiter);
      if (!this.pumping) void this.pump();
    });
  }

  /** Stops: every waiting claim resolves undefined. */
  close(): void {
    this.closed = true;
    for (const waiter of this.waiters.splice(0)) waiter.settle(undefined);
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (this.waiters.length > 0 && !this.closed) {
        const token = this.token();
        let job: Job | undefined;
        try {
          job = await this.worker.getNextJob(token, { block: true });
        } catch (error) {
          if (this.closed) return;
          this.context.reportError(error);
          await this.context.clock.sleep(250);
          continue;
        }
        if (job === undefined) continue;
        job.token = token;
        const waiter = this.waiters.shift();
        if (waiter !== undefined && !this.closed) waiter.settle(job);
        else await job.moveToWait(token).catch(this.context.reportError);
      }
    } finally {
      this.pumping = false;
    }
  }
}
