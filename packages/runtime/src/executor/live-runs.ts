import type { RunIdentity } from '@lunation/contract';
import type { ThreadLeases } from '../thread-lease.js';
import type { LiveRun } from './live-run.js';

/**
 * The runs live in this process: by thread from the moment a run reserves its thread, by run id once its loop
 * runs. A run id or a thread id finds a run (a run id first).
 */
export class LiveRuns {
  readonly byThread = new Map<string, LiveRun>();
  readonly byRun = new Map<string, LiveRun>();

  /** The live run with this run id, else the one on this thread. */
  find(id: string): LiveRun | undefined {
    return this.byRun.get(id) ?? this.byThread.get(id);
  }

  /** The identities of the runs whose loop runs. */
  identities(): RunIdentity[] {
    return [...this.byRun.values()].map((run) => run.identity);
  }

  /**
   * Ends the run's hold on its thread: closes its events, frees the thread here and releases its lease; the
   * promise of that release, if it has a lease (nothing to wait for otherwise). `held`: the token of a lease
   * taken for a run that was not launched.
   */
  release(run: LiveRun, leases: ThreadLeases | undefined, held?: number): Promise<void> | undefined {
    run.end();
    const { threadId, runId } = run.identity;
    if (this.byThread.get(threadId) === run) this.byThread.delete(threadId);
    this.byRun.delete(runId);
    const token = run.leaseToken ?? held;
    run.leaseToken = undefined;
    run.releasedToken = token;
    return leases && token !== undefined ? leases.release(threadId, token) : undefined;
  }
}
