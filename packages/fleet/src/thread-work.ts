import {
  type CancelRequest,
  type DispatchClaim,
  type Dispatcher,
  type InboxEntry,
  LunationError,
  type LunationStore,
  type ResumeDecision,
  type RunRecord,
} from '@lunation/contract';
import { type RunHandle, type RunResult, type ToolCallRecord, toolCallsKey } from '@lunation/runtime';
import type { RunExecutor } from '@lunation/runtime/executor';
import { claimLog, EventPipe, type PipedRun, type PipeOutcome, pipeEvents } from './event-pipe.js';
import { missingEvents, missingRunEnd, readLoggedRun, type UnnumberedEvent } from './log-repair.js';
import type { WorkerLogEntry } from './worker-log.js';

/** A fact of the work on a claimed thread; the worker adds its own ids (worker, claim, lease owner). */
export type ThreadWorkFact = Omit<WorkerLogEntry, 'workerId'>;

/** What a worker lends the work on one claimed thread. */
export interface ThreadWorkContext {
  /** The runtime's executor: the one way a thread's work runs, in a worker as in `AgentRuntime`. */
  executor: RunExecutor;
  store: LunationStore;
  dispatcher: Dispatcher;
  /** How long a run's event log stays readable after the run ends (or waits). */
  eventTtlMs: number;
  /** How long the claim holds: it is extended before each submission is applied. */
  claimLockMs: number;
  /** A submission the runtime refused as malformed: it is acknowledged and dropped. */
  onRejected(entry: InboxEntry, error: LunationError): void;
  /** Told of each run started and ended here, of a lost lease and of failed event appends. */
  report(fact: ThreadWorkFact): void;
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
 *
 * Slow is not dead: a run that stops because its lease went stale (this process stalled; another may hold the
 * thread now) leaves its submission unacknowledged and hands the thread back, so whoever holds the lease
 * continues it. The log gets the committed work a dead or refused worker left out (see {@link missingEvents})
 * before the run continues, and its events are fenced by the lease they were made under.
 *
 * A cancel request acts only on the run it names: the active run, or the run about to start or be resumed.
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
          // A worker that stalled past its claim applies nothing more (`claim-lost`): the thread is another's now.
          await dispatcher.extend(this.claim, this.context.claimLockMs);
          const held = await this.busyFrom(() => this.apply(entry));
          if (held) return held;
          await dispatcher.acknowledge(threadId, [entry.id]);
        }
      }
      // Nothing left to run: a cancel request still here is cleared once the run it names has ended. One naming a
      // run that waits for decisions holds until they come (they will find the run cancelled).
      const request = this.cancel;
      if (request) {
        const named =
          request.runId === undefined ? undefined : await this.context.store.getRun(request.runId);
        if (named === undefined || named.status === 'done')
          await dispatcher.clearCancel(threadId, request.id);
      }
      return { type: 'drained' };
    } finally {
      watch.close();
    }
  }

  /**
   * Continues the thread's latest run if a worker that died (or stalled and lost its lease) left it running, its
   * log first given the committed work it lacks; gives a finished or waiting run's log the ending the store has.
   */
  private async recover(): Promise<void> {
    const { store, executor } = this.context;
    const { threadId } = this.claim;
    const latest = await store.getLatestRun(threadId);
    if (latest === undefined) return;
    if (latest.status !== 'running') {
      await this.repairLog(latest);
      return;
    }
    const runId = latest.identity.runId;
    let handle: RunHandle;
    try {
      await this.readCancel();
      handle = await executor.run({ threadId, ...this.signalOption(runId) });
    } catch (error) {
      // The previous holder finished it meanwhile (a redelivered claim): nothing to continue, only its log.
      const now = LunationError.hasCode(error, 'invalid-argument') ? await store.getRun(runId) : undefined;
      if (now === undefined || now.status === 'running') throw error;
      await this.repairLog(now);
      return;
    }
    // Read once the log is claimed for the run's new lease: nothing the previous holder commits or appends later
    // can land. Only what was committed before this run loaded the thread is the previous holder's; the run
    // reports the rest itself.
    const loaded = this.context.executor.loadedRun(handle);
    const loadedMessages = loaded?.messageCount;
    await this.follow(handle, 'recovered', async () =>
      missingEvents(
        latest,
        await store.listMessages(threadId, loadedMessages === undefined ? {} : { toSeq: loadedMessages }),
        await readLoggedRun(this.context.dispatcher, runId),
        loaded?.callRecords,
      ),
    );
  }

  /** Applies one submission; a malformed one is reported and dropped. */
  private async apply(entry: InboxEntry): Promise<void> {
    const { executor, store } = this.context;
    const { request } = entry;
    try {
      // The claim's recovery has continued (or repaired the log of) the stranded run already.
      if (request.type === 'continue') return;
      if (request.type === 'decisions') {
        await this.readCancel();
        const signal = this.cancel ? await this.waitingRunSignal(entry.threadId) : {};
        const outcome = await executor.decide({ threadId: entry.threadId }, request.decisions, signal);
        if (outcome.run) await this.follow(outcome.run, 'resumed');
        return;
      }
      if (request.runId !== undefined) {
        // Applied by a worker that died (or lost the thread) before acknowledging it: the run's first commit holds
        // the input. A finished one's log gets what it lacks.
        const applied = await store.getRun(request.runId);
        if (applied !== undefined) {
          // Found running: its first commit may have landed after the claim's recovery looked (this claim was
          // delivered again while its holder started the run). Continue it under the lease — while the holder
          // lives that is `thread-busy`, and the thread is handed back with the submission unacknowledged.
          if (applied.status === 'running') await this.recover();
          else await this.repairLog(applied);
          return;
        }
      }
      await this.readCancel();
      const handle = await executor.run({
        threadId: entry.threadId,
        input: request.input,
        ...(request.agentId === undefined ? {} : { agentId: request.agentId }),
        ...(request.runId === undefined ? {} : { runId: request.runId }),
        ...(entry.resourceId === undefined ? {} : { resourceId: entry.resourceId }),
        ...(request.frontendTools === undefined ? {} : { frontendTools: request.frontendTools }),
        ...this.signalOption(request.runId),
      });
      await this.follow(handle, 'started', undefined, Math.max(0, this.claim.claimedAt - entry.submittedAt));
    } catch (error) {
      if (
        request.type === 'input' &&
        LunationError.hasCode(error, 'store-conflict') &&
        request.runId !== undefined &&
        error.details?.runId === request.runId
      ) {
        // Its run was committed by a holder whose commit landed after the check above: continue it, or give its
        // log what it lacks, as for a submission found applied.
        const applied = await store.getRun(request.runId);
        if (applied?.status === 'running') await this.recover();
        else if (applied !== undefined) await this.repairLog(applied);
        return;
      }
      if (!LunationError.isInstance(error) || !rejections.has(error.code)) throw error;
      this.context.onRejected(entry, error);
    }
  }

  /**
   * Copies the run's events to its log (after `prefix`, what the log lacked of the run's committed work, read once
   * the log is claimed for the run's lease so that a stalled previous holder's late appends cannot land), fenced
   * by the run's lease, until it ends; marks a finished run's log ended and clears a cancel it handled. A run
   * that stopped because its lease went stale throws `lease-lost`: its `run-end` (status `running`) never reaches
   * the log, and the thread is handed back to whoever holds it now. A waiting run's log stays open, so a client
   * following it sees the resume's events whichever worker runs it.
   */
  private async follow(
    handle: RunHandle,
    how: 'started' | 'resumed' | 'recovered',
    prefix?: () => Promise<readonly UnnumberedEvent[]>,
    waitedMs?: number,
  ): Promise<void> {
    const { dispatcher, eventTtlMs, report } = this.context;
    const runId = handle.identity.runId;
    const fence = this.context.executor.loadedRun(handle)?.leaseToken;
    const ids = { runId, ...(fence === undefined ? {} : { leaseToken: fence }) };
    report({
      level: 'info',
      event: 'run-started',
      message: `Run "${runId}" of thread "${this.claim.threadId}" ${how} here`,
      how,
      ...ids,
      ...(waitedMs === undefined ? {} : { waitedMs }),
    });
    this.active = handle;
    let piped: PipedRun;
    let result: RunResult;
    try {
      const onAppendFailed = (error: unknown) => this.appendFailed(runId, error);
      if (prefix !== undefined) await claimLog(dispatcher, runId, { fence, onAppendFailed });
      piped = await pipeEvents(dispatcher, runId, handle.events, {
        fence,
        prefix: prefix === undefined ? [] : await prefix(),
        onAppendFailed,
      });
      result = await handle.result;
    } finally {
      this.active = undefined;
    }
    if (result.status === 'running') {
      // Its `run-end` (status `running`) never reaches the log: the run goes on elsewhere.
      await piped.pipe.flush();
      report({
        level: 'warn',
        event: 'lease-lost',
        message: `Run "${runId}" stopped: this worker lost the lease of thread "${this.claim.threadId}"`,
        ...ids,
      });
      throw new LunationError('lease-lost', `Run "${runId}" stopped: this worker lost its thread's lease`, {
        details: { threadId: this.claim.threadId, runId },
      });
    }
    report({
      level: result.termination.type === 'error' ? 'warn' : 'info',
      event: 'run-ended',
      message: `Run "${runId}" of thread "${this.claim.threadId}" ended ${result.status} (${result.termination.type})`,
      ...ids,
      status: result.status,
      termination: result.termination.type,
      steps: result.steps,
    });
    let end: UnnumberedEvent | undefined = piped.end;
    if (result.termination.type === 'error') {
      await piped.pipe.flush(); // what the run did reaches its log, whatever its ending turns out to be
      end = await this.storedEnding(runId, end);
    }
    if (end !== undefined) piped.pipe.push(end);
    const outcome: PipeOutcome = await piped.pipe.flush();
    if (result.status === 'done' && outcome === 'appended') {
      await dispatcher.endEvents(runId, { ttlMs: eventTtlMs, ...(fence === undefined ? {} : { fence }) });
    }
    const handled = this.cancel;
    if (!handled || (handled.runId !== undefined && handled.runId !== runId)) return;
    if (result.status === 'waiting' && result.openTickets.length > 0 && handled.runId === runId) {
      // The cancel came as the run suspended: it still holds. The run's open tickets are declined and it ends.
      const decisions = result.openTickets.map(
        (ticket): ResumeDecision => ({
          decisionId: `cancel-${handled.id}-${ticket.id}`,
          ticketId: ticket.id,
          action: 'cancel',
          reason: handled.reason,
        }),
      );
      const signal = AbortSignal.abort(handled.reason);
      const outcome = await this.context.executor.decide({ threadId: this.claim.threadId }, decisions, {
        signal,
      });
      if (outcome.run) await this.follow(outcome.run, 'resumed');
      return;
    }
    if (result.status !== 'done' && handled.runId === runId) return; // held until the run it names ends
    this.cancel = undefined;
    await dispatcher.clearCancel(this.claim.threadId, handled.id);
  }

  /**
   * The `run-end` the log of a run that ended with an error gets. An error ending may be one whose own commit
   * failed, so the store decides: only an ending it has as the run's own (that status, an error) is logged here.
   * Otherwise the run's last commit did not land as it says — the store has it `running`, or not at all (its
   * first commit failed too), or still `waiting` (a resume whose first commit failed), or ended otherwise (an
   * ambiguous commit that did land) — and the thread is handed back without acknowledging the submission: the
   * run goes on from the store or from its submission applied again, and its log gets the store's ending then.
   */
  private async storedEnding(
    runId: string,
    own: UnnumberedEvent | undefined,
  ): Promise<UnnumberedEvent | undefined> {
    const stored = await this.context.store.getRun(runId);
    if (own?.type === 'run-end' && stored?.status === own.status && stored.termination?.type === 'error')
      return own;
    throw new LunationError(
      'lease-lost',
      `Run "${runId}" could not commit its end; it goes on from the store`,
      {
        details: { threadId: this.claim.threadId, runId },
      },
    );
  }

  /**
   * Gives a finished or waiting run's log what the store committed and the log lacks — the steps and results a
   * worker that died (or whose appends failed) left out, and the run's ending — under a lease of its own on the
   * thread, so a stalled previous holder's late appends are refused after it (`thread-busy` while that holder's
   * lease lasts: the thread is handed back). A finished run whose log could have expired is left alone.
   */
  private async repairLog(seen: RunRecord): Promise<void> {
    const { dispatcher, eventTtlMs, store } = this.context;
    const expired = (run: RunRecord) => run.status === 'done' && Date.now() - run.updatedAt > eventTtlMs;
    if (!seen.termination || expired(seen)) return;
    const { runId, threadId } = seen.identity;
    // The common case: the log ends as the store does. Its pipe appends in order, so nothing before is missing.
    if (missingRunEnd(seen, (await readLoggedRun(dispatcher, runId)).last) === undefined) return;
    const { executor } = this.context;
    const fence = await executor.acquireLease(threadId, runId);
    try {
      const onAppendFailed = (error: unknown) => this.appendFailed(runId, error);
      if ((await claimLog(dispatcher, runId, { fence, onAppendFailed })) === 'refused') return;
      // Read again under the lease, the log claimed for it: what the previous holder committed or appended is all
      // there now, and nothing it still has on its way can land.
      const run = await store.getRun(runId);
      if (run === undefined || run.status === 'running' || expired(run)) return;
      const logged = await readLoggedRun(dispatcher, runId);
      const state = await store.getThreadState(threadId);
      const settled = state[toolCallsKey.name] as Record<string, ToolCallRecord> | undefined;
      const events = missingEvents(run, await store.listMessages(threadId), logged, settled);
      const end = missingRunEnd(run, events.length > 0 ? undefined : logged.last);
      if (end) events.push(end);
      if (events.length === 0) return;
      const pipe = new EventPipe(dispatcher, runId, { fence, onAppendFailed });
      for (const event of events) pipe.push(event);
      if ((await pipe.flush()) === 'refused' || run.status !== 'done') return;
      await dispatcher.endEvents(runId, { ttlMs: eventTtlMs, ...(fence === undefined ? {} : { fence }) });
    } finally {
      if (fence !== undefined) await executor.releaseLease(threadId, fence);
    }
  }

  private appendFailed(runId: string, error: unknown): void {
    this.context.report({
      level: 'warn',
      event: 'event-append-failed',
      message: `An append to the event log of run "${runId}" failed (retried): ${messageOf(error)}`,
      runId,
      ...errorFields(error),
    });
  }

  /** A cancel request: stops the active run it names (a request naming no run: the active one). */
  private cancelled(request: CancelRequest): void {
    this.cancel = request;
    const active = this.active;
    if (active && (request.runId === undefined || request.runId === active.identity.runId)) {
      active.cancel(request.reason);
    }
  }

  /**
   * The thread's cancel request as the dispatcher has it now: its watch tells of a request some time after it is
   * filed, and a decision or a run filed after the cancel must not start before the cancel is known here.
   */
  private async readCancel(): Promise<void> {
    if (this.cancel !== undefined) return;
    const request = await this.context.dispatcher.cancelRequest(this.claim.threadId);
    if (request !== undefined && this.cancel === undefined) this.cancel = request;
  }

  /** An already aborted `signal` when the pending cancel request names the run about to start. */
  private signalOption(runId: string | undefined): { signal?: AbortSignal } {
    const request = this.cancel;
    if (!request || request.runId === undefined || request.runId !== runId) return {};
    return { signal: AbortSignal.abort(request.reason) };
  }

  /** The signal for decisions on the thread's waiting run: aborted when the pending cancel names that run. */
  private async waitingRunSignal(threadId: string): Promise<{ signal?: AbortSignal }> {
    const latest = await this.context.store.getLatestRun(threadId);
    return this.signalOption(latest?.identity.runId);
  }

  /** Runs `work`; a `thread-busy` from another process's lease (or a lease lost to it) becomes a hand-back. */
  private async busyFrom(work: () => Promise<void>): Promise<ThreadWorkOutcome | undefined> {
    try {
      await work();
      return undefined;
    } catch (error) {
      if (LunationError.hasCode(error, 'lease-lost')) return { type: 'busy', retryAfterMs: 1_000 };
      if (!LunationError.hasCode(error, 'thread-busy')) throw error;
      // Poll at least every second: a live holder that finishes early frees the thread before its lease expires.
      const retryAfterMs = Number(error.details?.retryAfterMs);
      const delay = Number.isFinite(retryAfterMs) ? Math.min(Math.max(50, retryAfterMs), 1_000) : 1_000;
      return { type: 'busy', retryAfterMs: delay };
    }
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `error` and `errorCode` of a log entry. */
export function errorFields(error: unknown): { error: string; errorCode?: string } {
  return {
    error: messageOf(error),
    ...(LunationError.isInstance(error) ? { errorCode: error.code } : {}),
  };
}
