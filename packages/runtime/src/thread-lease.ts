import { type Lease, LunationError } from '@lunation/contract';
import type { Persistence } from './persistence.js';

/** A lease held by a live run: its fencing token, and the run to abort if a renewal fails. */
interface HeldLease {
  token: number;
  run: AbortController;
}

/**
 * The leases of one runtime's runs on their threads, across processes: the store's lease with its fencing token,
 * renewed while the run lives, released when it ends. A lease left behind by an earlier life of this same owner
 * (a restart with a stable `owner`) is taken over at once instead of waited out.
 *
 * One ticker renews every held lease each third of the time to live (rather than a timer per run), so no lease
 * goes longer than that without a renewal; a failed renewal aborts its run with `lease-lost`. The ticker stops
 * on the first tick that finds no lease held.
 */
export class ThreadLeases {
  private readonly held = new Map<string, HeldLease>();
  private ticker: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly persistence: Persistence,
    private readonly owner: string,
    private readonly ttlMs: number,
  ) {}

  /** Takes the thread for `runId`; `thread-busy` (saying when it frees up) while another owner holds it. */
  acquire(threadId: string, runId: string): Promise<number | undefined> {
    return this.persistence
      .acquireLease(threadId, runId, this.owner, this.ttlMs)
      .then(tokenOf, (error: unknown) => this.takeOver(threadId, runId, error));
  }

  /** The thread is busy: if with a lease of this owner's earlier life, takes it over; else rethrows. */
  private async takeOver(threadId: string, runId: string, error: unknown): Promise<number | undefined> {
    const { persistence, owner, ttlMs } = this;
    if (!LunationError.hasCode(error, 'thread-busy')) throw error;
    const lease = await persistence.getLease(threadId);
    if (lease === undefined) throw error; // freed a moment ago: still busy as far as this caller knows
    if (lease.owner !== owner) throw busyElsewhere(threadId, lease.runId, lease.owner, lease.expiresAt);
    // Our own lease from before a restart: no run of ours holds it now (the caller checked), so take it over.
    // Releasing and acquiring again issues a new fencing token, which fences out any write of the old life.
    await persistence.releaseLease(threadId, lease.token);
    return tokenOf(await persistence.acquireLease(threadId, runId, owner, ttlMs));
  }

  /**
   * Holds the thread in another run's name (an earlier run being continued), so `thread-busy` names that run:
   * releases `token` and acquires again. Resolves with the new token (undefined if the old one is released and
   * the new one could not be had).
   */
  async retake(threadId: string, token: number, runId: string): Promise<number | undefined> {
    await this.persistence.releaseLease(threadId, token);
    return (await this.persistence.acquireLease(threadId, runId, this.owner, this.ttlMs))?.token;
  }

  /** Renews the lease while the run lives; a failed renewal aborts `run` with `lease-lost`. */
  keep(threadId: string, token: number, run: AbortController): void {
    this.held.set(threadId, { token, run });
    if (this.ticker !== undefined) return;
    this.ticker = setInterval(() => this.renewAll(), Math.max(50, Math.floor(this.ttlMs / 3)));
    this.ticker.unref();
  }

  /** Stops renewing the lease and releases it (a failure to release only leaves it to expire). */
  release(threadId: string, token: number): Promise<void> {
    if (this.held.get(threadId)?.token === token) this.held.delete(threadId);
    return this.persistence.releaseLease(threadId, token).then(nothing, nothing);
  }

  private renewAll(): void {
    if (this.held.size === 0) {
      clearInterval(this.ticker);
      this.ticker = undefined;
      return;
    }
    for (const [threadId, lease] of this.held) {
      this.persistence.renewLease(threadId, lease.token, this.ttlMs).catch((error: unknown) => {
        // Only a lease still held counts as lost: one released meanwhile just ended with its run.
        if (this.held.get(threadId) !== lease) return;
        this.held.delete(threadId);
        lease.run.abort(
          new LunationError('lease-lost', `Lost the lease of thread "${threadId}"`, { cause: error }),
        );
      });
    }
  }
}

function tokenOf(lease: Lease | undefined): number | undefined {
  return lease?.token;
}

function nothing(): void {}

/** The thread has an active run in this process. */
export function busyHere(threadId: string, runId: string): LunationError {
  return new LunationError(
    'thread-busy',
    `Thread "${threadId}" already has an active run (run ${runId}); wait for it or cancel it`,
    { details: { threadId, runId } },
  );
}

/** The thread is held by another process: say whose it is and when it frees up if that process is gone. */
function busyElsewhere(threadId: string, runId: string, owner: string, expiresAt: number): LunationError {
  const seconds = Math.max(0, Math.ceil((expiresAt - Date.now()) / 1_000));
  return new LunationError(
    'thread-busy',
    `Thread "${threadId}" has an active run (run ${runId}) in another process (${owner}). If that process stopped, ` +
      `the thread is free when its lease expires in ${seconds} s; retry then. A process restarted with the same ` +
      '`owner` takes its own threads back at once.',
    { details: { threadId, runId, owner, expiresAt } },
  );
}
