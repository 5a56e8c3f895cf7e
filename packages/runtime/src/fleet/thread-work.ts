import {
  type AgentEvent,
  type CancelRequest,
  type DispatchClaim,
  type Dispatcher,
  type InboxEntry,
  LunationError,
  type LunationStore,
  type RunRecord,
} from '@lunation/contract';
import type { RunHandle } from '../executor/run-options.js';
import type { ThreadExecutor } from '../executor/thread-executor.js';
import { pipeEvents } from './event-pipe.js';

/** What a worker lends the work on one claimed thread. */
export interface ThreadWorkContext {
  /** The runtime's executor: the one way a thread's work runs, in a worker as in `AgentRuntime`. */
  executor: ThreadExecutor;
  store: LunationStore;
  dispatcher: Dispatcher;
  /** How long a run's event log stays readable after the run ends (or waits). */
  eventTtlMs: number;
  /** A submission the runtime refused as malformed: it is acknowledged and dropped. */
  onRejected(entry: InboxEntry, error: LunationError): void;
}

/** How the work on a claimed thread ended. */
export type ThreadWorkOutcome =
  /** The inbox is empty: complete the claim. */
  | { type: 'drained' }
  /** Another process holds the thread's lease: hand the claim back for this long. */
  | { type: 'busy'; retryAfterMs: number };

/** Errors that say the submission itself is wrong: retrying it cannot help. */
const rejections = new Set(['invalid-argument', 'decision-invalid', 'unknown-ticket', 'not-found']);

/**
 * The work a claim stands for, in the order the store needs it: first a run some dead worker left `running` is
 * continued from the store, then each submission of the inbox is applied and acknowledged, oldest first, until
 * the inbox is empty. The thread's lease (taken by the runtime for every run) decides who runs it; a submission
 * whose run is already in the store (its worker died after the run's first commit) is not applied twice.
 * Cancel requests reach the thread's active run, or the next one to start.
 */
export class ThreadWork {
  private cancel: CancelRequest | undefined;
  private active: RunHandle | undefined;

  constructor(
    private readonly context: ThreadWorkContext,
    private readonly claim: DispatchClaim,
  ) {}

  /** Does the work; a thread held elsewhere ends it early with `busy`. Other failures reject. */
  async run(): Promise<ThreadWorkOutcome> {
    const { dispatcher } = this.context;
    const { threadId } = this.claim;
    const watch = await dispatcher.watchCancel(threadId, (request) => this.cancelled(request));
    try {
      const busy = await this.busyFrom(() => this.recover());
      if (busy) return busy;
      for (;;) {
        const entries = await dispatcher.pending(threadId);
        if (entries.length === 0) break;
        for (const entry of entries) {
          const held = await this.busyFrom(() => this.apply(entry));
          if (held) return held;
          await dispatcher.acknowledge(threadId, [entry.id]);
        }
      }
      // Nothing left to run: a cancel request that found no run has nothing to stop.
      if (this.cancel) await dispatcher.clearCancel(threadId, this.cancel.id);
      return { type: 'drained' };
    } finally {
      watch.close();
    }
  }

  /**
   * Continues the thread's latest run if a worker that died left it running; if that worker died after the run's
   * last commit but before its `run-end` reached the log, gives the log the ending the store has.
   */
  private async recover(): Promise<void> {
    const latest = await this.context.store.getLatestRun(this.claim.threadId);
    if (latest === undefined) return;
    if (latest.status !== 'running') {
      await this.endLogLikeStore(latest);
      return;
    }
    const { threadId } = this.claim;
    await this.follow(
      await this.context.executor.run({ threadId, ...this.signalOption(latest.identity.runId) }),
    );
  }

  /** Applies one submission; a malformed one is reported and dropped. */
  private async apply(entry: InboxEntry): Promise<void> {
    const { executor, store } = this.context;
    const { request } = entry;
    try {
      if (request.type === 'decisions') {
        const outcome = await executor.decide({ threadId: entry.threadId }, request.decisions);
        if (outcome.run) await this.follow(outcome.run);
        return;
      }
      // Applied by a worker that died before acknowledging it: the run's first commit holds the input.
      if (request.runId !== undefined && (await store.getRun(request.runId)) !== undefined) return;
      const handle = await executor.run({
        threadId: entry.threadId,
        input: request.input,
        ...(request.agentId === undefined ? {} : { agentId: request.agentId }),
        ...(request.runId === undefined ? {} : { runId: request.runId }),
        ...(entry.resourceId === undefined ? {} : { resourceId: entry.resourceId }),
        ...(request.frontendTools === undefined ? {} : { frontendTools: request.frontendTools }),
        ...this.signalOption(request.runId),
      });
      await this.follow(handle);
    } catch (error) {
      if (!LunationError.isInstance(error) || !rejections.has(error.code)) throw error;
      this.context.onRejected(entry, error);
    }
  }

  /**
   * Copies the run's events to its log until it ends, and clears a cancel it handled. The log of a finished run
   * is marked ended (it expires later); a waiting run's log stays open, so a client following it sees the
   * resume's events whichever worker runs it.
   */
  private async follow(handle: RunHandle): Promise<void> {
    const { dispatcher, eventTtlMs } = this.context;
    this.active = handle;
    try {
      const runId = handle.identity.runId;
      await pipeEvents(dispatcher, runId, handle.events);
      const result = await handle.result;
      if (result.status === 'done') await dispatcher.endEvents(runId, { ttlMs: eventTtlMs });
    } finally {
      this.active = undefined;
    }
    const handled = this.cancel;
    if (handled && (handled.runId === undefined || handled.runId === handle.identity.runId)) {
      this.cancel = undefined;
      await dispatcher.clearCancel(this.claim.threadId, handled.id);
    }
  }

  /**
   * Followers of a run wait for its `run-end`. The store says how the run ended (or waits); when its log does not
   * end that way (the worker died between the commit and the append), the `run-end` is appended from the record.
   * A finished run whose log could have expired is left alone.
   */
  private async endLogLikeStore(run: RunRecord): Promise<void> {
    const { dispatcher, eventTtlMs } = this.context;
    const { termination } = run;
    if (!termination || (run.status === 'done' && Date.now() - run.updatedAt > eventTtlMs)) return;
    const runId = run.identity.runId;
    const last = await lastEvent(dispatcher, runId);
    const tickets = (event: { openTickets: Array<{ id: string }> }) =>
      event.openTickets.map((ticket) => ticket.id).join();
    if (last?.type === 'run-end' && last.status === run.status && tickets(last) === tickets(run)) return;
    await dispatcher.appendEvents(runId, [
      {
        type: 'run-end',
        identity: run.identity,
        seq: last === undefined ? 0 : last.seq + 1,
        status: run.status,
        termination,
        finalText: run.finalText ?? '',
        steps: run.steps,
        usage: run.usage,
        openTickets: run.openTickets,
        timestamp: Date.now(),
      },
    ]);
    if (run.status === 'done') await dispatcher.endEvents(runId, { ttlMs: eventTtlMs });
  }

  /** A cancel request: stops the active run it names, or waits for the run it names to start. */
  private cancelled(request: CancelRequest): void {
    this.cancel = request;
    const active = this.active;
    if (active && (request.runId === undefined || request.runId === active.identity.runId)) {
      active.cancel(request.reason);
    }
  }

  /** An already aborted `signal` when a pending cancel request names the run about to start (or any run). */
  private signalOption(runId: string | undefined): { signal?: AbortSignal } {
    const request = this.cancel;
    if (!request || (request.runId !== undefined && request.runId !== runId)) return {};
    return { signal: AbortSignal.abort(request.reason) };
  }

  /** Runs `work`; a `thread-busy` from another process's lease becomes a hand-back outcome. */
  private async busyFrom(work: () => Promise<void>): Promise<ThreadWorkOutcome | undefined> {
    try {
      await work();
      return undefined;
    } catch (error) {
      if (!LunationError.hasCode(error, 'thread-busy')) throw error;
      // Poll at least every second: a live holder that finishes early frees the thread before its lease expires.
      const retryAfterMs = Number(error.details?.retryAfterMs);
      const delay = Number.isFinite(retryAfterMs) ? Math.min(Math.max(50, retryAfterMs), 1_000) : 1_000;
      return { type: 'busy', retryAfterMs: delay };
    }
  }
}

/** The last event of a run's log, or undefined for an empty (or expired) log. */
async function lastEvent(log: Dispatcher, runId: string): Promise<AgentEvent | undefined> {
  let last: AgentEvent | undefined;
  let after = '0';
  for (;;) {
    const page = await log.readEvents(runId, { after, limit: 1_000 });
    const tail = page.events.at(-1);
    if (tail === undefined) return last;
    last = tail.event;
    after = tail.id;
    if (page.events.length < 1_000) return last;
  }
}
