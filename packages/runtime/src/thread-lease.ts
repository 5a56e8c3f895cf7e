import { LunationError } from '@lunation/contract';
import type { Persistence } from './persistence.js';

/**
 * A run's hold on its thread across processes: the store's lease with its fencing token, renewed every third
 * of its time to live while the run lives, released when it ends. A lease left behind by an earlier life of
 * this same owner (a restart with a stable `owner`) is taken over at once instead of waited out.
 */
export class ThreadLease {
  token: number | undefined;
  private renewTimer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly persistence: Persistence,
    private readonly threadId: string,
    private readonly owner: string,
    private readonly ttlMs: number,
  ) {}

  /** Takes the thread for `runId`; `thread-busy` (saying when it frees up) while another owner holds it. */
  async acquire(runId: string): Promise<void> {
    const { persistence, threadId, owner, ttlMs } = this;
    try {
      this.token = (await persistence.acquireLease(threadId, runId, owner, ttlMs))?.token;
    } catch (error) {
      if (!LunationError.hasCode(error, 'thread-busy')) throw error;
      const lease = await persistence.getLease(threadId);
      if (lease === undefined) throw error; // freed a moment ago: still busy as far as this caller knows
      if (lease.owner !== owner) throw busyElsewhere(threadId, lease.runId, lease.owner, lease.expiresAt);
      // Our own lease from before a restart: no run of ours holds it now (the caller checked), so take it over.
      // Releasing and acquiring again issues a new fencing token, which fences out any write of the old life.
      await persistence.releaseLease(threadId, lease.token);
      this.token = (await persistence.acquireLease(threadId, runId, owner, ttlMs))?.token;
    }
  }

  /** Holds the lease in another run's name (an earlier run being continued), so `thread-busy` names that run. */
  async retake(runId: string): Promise<void> {
    if (this.token === undefined) return;
    await this.persistence.releaseLease(this.threadId, this.token);
    this.token = undefined;
    this.token = (await this.persistence.acquireLease(this.threadId, runId, this.owner, this.ttlMs))?.token;
  }

  /** Renews the lease while the run lives; `onLost` when that fails (another process took the thread). */
  keepAlive(onLost: (error: LunationError) => void): void {
    const token = this.token;
    if (token === undefined) return;
    this.renewTimer = setInterval(
      () => {
        this.persistence.renewLease(this.threadId, token, this.ttlMs).catch((error) => {
          onLost(
            new LunationError('lease-lost', `Lost the lease of thread "${this.threadId}"`, { cause: error }),
          );
        });
      },
      Math.max(50, Math.floor(this.ttlMs / 3)),
    );
    this.renewTimer.unref();
  }

  async release(): Promise<void> {
    if (this.renewTimer !== undefined) clearInterval(this.renewTimer);
    this.renewTimer = undefined;
    const token = this.token;
    this.token = undefined;
    if (token !== undefined) await this.persistence.releaseLease(this.threadId, token).catch(() => false);
  }
}

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
