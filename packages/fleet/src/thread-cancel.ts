import type { CancelRequest, Dispatcher, LunationStore } from '@lunation/contract';
import type { RunHandle, RunResult } from '@lunation/runtime';

/**
 * The cancel request of one claimed thread, as its work sees it. A request acts only on the run it names: the
 * active run, or the run about to start or be resumed (a request naming no run: the active one). It is cleared
 * once the run it names has ended; one naming a run that waits for decisions holds until they come.
 */
export class ThreadCancel {
  private current: CancelRequest | undefined;
  private active: RunHandle | undefined;

  constructor(
    private readonly dispatcher: Dispatcher,
    private readonly store: LunationStore,
    private readonly threadId: string,
  ) {}

  /** The request this work knows of. */
  get request(): CancelRequest | undefined {
    return this.current;
  }

  /** The dispatcher told of a request: it stops the active run it names. */
  requested(request: CancelRequest): void {
    this.current = request;
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
   * Reads the request as the dispatcher has it now: its watch tells of a request some time after it is filed, and
   * a decision or a run filed after the cancel must not start before the cancel is known here.
   */
  async read(): Promise<void> {
    if (this.current !== undefined) return;
    const request = await this.dispatcher.cancelRequest(this.threadId);
    if (request !== undefined && this.current === undefined) this.current = request;
  }

  /** An already aborted `signal` when the request names the run about to start. */
  signalFor(runId: string | undefined): { signal?: AbortSignal } {
    const request = this.current;
    if (!request || request.runId === undefined || request.runId !== runId) return {};
    return { signal: AbortSignal.abort(request.reason) };
  }

  /** The signal for decisions on the thread's waiting run: aborted when the request names that run. */
  async waitingRunSignal(): Promise<{ signal?: AbortSignal }> {
    if (!this.current) return {};
    const latest = await this.store.getLatestRun(this.threadId);
    return this.signalFor(latest?.identity.runId);
  }

  /**
   * After a followed run ended or stopped to wait: the request that still holds over the run's open tickets (it
   * came as the run suspended: they are to be declined), or undefined. A request the run handled is cleared.
   */
  async afterRun(runId: string, result: RunResult): Promise<CancelRequest | undefined> {
    const handled = this.current;
    if (!handled || (handled.runId !== undefined && handled.runId !== runId)) return undefined;
    if (result.status === 'waiting' && result.openTickets.length > 0 && handled.runId === runId)
      return handled;
    if (result.status !== 'done' && handled.runId === runId) return undefined; // held until the run it names ends
    this.current = undefined;
    await this.dispatcher.clearCancel(this.threadId, handled.id);
    return undefined;
  }

  /**
   * Nothing is left to run: a request still here is cleared once the run it names has ended. One naming a run
   * that waits for decisions holds until they come (they will find the run cancelled).
   */
  async clearIfEnded(): Promise<void> {
    const request = this.current;
    if (!request) return;
    const named = request.runId === undefined ? undefined : await this.store.getRun(request.runId);
    if (named === undefined || named.status === 'done')
      await this.dispatcher.clearCancel(this.threadId, request.id);
  }
}
