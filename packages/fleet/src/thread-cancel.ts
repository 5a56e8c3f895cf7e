import type { CancelRequest, Dispatcher, LunationStore } from '@lunation/contract';
import type { RunHandle, RunResult } from '@lunation/runtime';

/**
 * The cancel requests of one claimed thread, as its work sees them: the thread may hold several, one per run they
 * name (and one naming no run). A request acts only on the run it names: the active run, or the run about to start
 * or be resumed (a request naming no run: the active one). Each is cleared once the run it names has ended; one
 * naming a run that waits for decisions holds until they come.
 */
export class ThreadCancel {
  /** The requests known here, by the run they name (`''`: none named). */
  private readonly requests = new Map<string, CancelRequest>();
  private active: RunHandle | undefined;

  constructor(
    private readonly dispatcher: Dispatcher,
    private readonly store: LunationStore,
    private readonly threadId: string,
  ) {}

  /** The dispatcher told of a request: it stops the active run it names. */
  requested(request: CancelRequest): void {
    this.requests.set(request.runId ?? '', request);
    const active = this.active;
    if (active && (request.runId === undefined || request.runId === active.identity.runId)) {
      active.cancel(request.reason);
    }
  }

  /** The run whose events are being followed now (undefined once it ended): a request may stop it. */
  following(handle: RunHandle | undefined): void {
    this.active = handle;
  }

  /**
   * Reads the requests as the dispatcher has them now: its watch tells of a request some time after it is filed,
   * and a decision or a run filed after the cancel must not start before the cancel is known here.
   */
  async read(): Promise<void> {
    for (const request of await this.dispatcher.cancelRequests(this.threadId)) {
      const key = request.runId ?? '';
      if (!this.requests.has(key)) this.requests.set(key, request);
    }
  }

  /** An already aborted `signal` when a request names the run about to start. */
  signalFor(runId: string | undefined): { signal?: AbortSignal } {
    const request = runId === undefined ? undefined : this.requests.get(runId);
    if (!request) return {};
    return { signal: AbortSignal.abort(request.reason) };
  }

  /** The signal for decisions on the thread's waiting run: aborted when a request names that run. */
  async waitingRunSignal(): Promise<{ signal?: AbortSignal }> {
    if (this.requests.size === 0) return {};
    const latest = await this.store.getLatestRun(this.threadId);
    return this.signalFor(latest?.identity.runId);
  }

  /**
   * After a followed run ended or stopped to wait: the request naming it that still holds over the run's open
   * tickets (it came as the run suspended: they are to be declined), or undefined. A request the run handled is
   * cleared: one naming no run (it was for the run active here), and one naming the run once the run is done.
   */
  async afterRun(runId: string, result: RunResult): Promise<CancelRequest | undefined> {
    const unnamed = this.requests.get('');
    if (unnamed) await this.clear(unnamed);
    const handled = this.requests.get(runId);
    if (!handled) return undefined;
    if (result.status === 'waiting' && result.openTickets.length > 0) return handled;
    if (result.status !== 'done') return undefined; // held until the run it names ends
    await this.clear(handled);
    return undefined;
  }

  /**
   * Nothing is left to run: a request still here is cleared once the run it names has ended. One naming a run
   * that waits for decisions holds until they come (they will find the run cancelled).
   */
  async clearIfEnded(): Promise<void> {
    for (const request of [...this.requests.values()]) {
      const named = request.runId === undefined ? undefined : await this.store.getRun(request.runId);
      if (named === undefined || named.status === 'done') await this.clear(request);
    }
  }

  /** Clears a request here and in the dispatcher (a newer one for the same run stays). */
  private async clear(request: CancelRequest): Promise<void> {
    const key = request.runId ?? '';
    if (this.requests.get(key)?.id === request.id) this.requests.delete(key);
    await this.dispatcher.clearCancel(this.threadId, request.id);
  }
}
