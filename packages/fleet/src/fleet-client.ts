import {
  assertSpecificationVersion,
  type Dispatcher,
  type IdSource,
  type InboxEntry,
  LunationError,
  type LunationStore,
  type ResumeDecision,
  type RunEventRecord,
  type SubscribeEventsOptions,
  type SuspensionTicket,
  systemIds,
  type TerminationReason,
} from '@lunation/contract';
import type { FrontendTool, RunInput, ThreadCaller } from '@lunation/runtime';
import { admitDecisions, normaliseInput, validateDecisionShapes } from '@lunation/runtime/executor';
import { ownsThread } from '@lunation/runtime/internal';

/** What {@link FleetClient} takes. */
export interface FleetClientOptions {
  /** Where submissions go and run events come from: the workers' dispatcher. */
  dispatcher: Dispatcher;
  /** The store the workers share: read for the runs that decisions resume. */
  store: LunationStore;
  /** Where run, submission and decision ids come from; a simulation passes a seeded source. @default systemIds */
  ids?: IdSource;
}

/** What {@link FleetClient.send} takes. */
export interface FleetSendOptions {
  threadId: string;
  input: RunInput;
  /** @default the thread's active agent */
  agentId?: string;
  /** The tenant of a new thread (and of the per-tenant figures and cap). */
  resourceId?: string;
  /**
   * The id of the run the input starts, so that a retried send (after a timeout, on another server) starts one
   * run: a submission naming a run that exists is applied as done. `store-conflict` when another thread has a run
   * of that id. @default a new id
   */
  runId?: string;
  /** Client-side tools for the run: a call suspends until a decision carries the client's result. */
  frontendTools?: FrontendTool[];
}

/** What {@link FleetClient.cancel} takes. */
export interface FleetCancelOptions {
  /** The run to cancel. @default the thread's current run: its latest unfinished run, else its newest submitted one */
  runId?: string;
  /** @default 'cancelled' */
  reason?: string;
}

/** What {@link FleetClient.cancel} did. */
export interface FleetCancel {
  /**
   * True when the run had not ended: it ends `cancelled` (a tool already running may still finish; nothing
   * starts after). False when it had ended, or the thread has no run.
   */
  cancelled: boolean;
  /** The run the cancel named. */
  runId?: string;
  /** The id of the cancel request filed (when `cancelled`). */
  requestId?: string;
  /** How the run had ended, when it had (`cancelled` is false). */
  termination?: TerminationReason;
}

/** A submission made: its id and the run whose events tell what became of it. */
export interface FleetSubmission {
  submissionId: string;
  /** The run the submission starts or resumes; follow it with {@link FleetClient.events}. */
  runId: string;
}

/** What {@link FleetClient.decide} did: the decisions admitted against the thread as the store has it. */
export interface FleetDecision {
  /** The submission's id; absent when every decision was applied before (nothing was submitted). */
  submissionId?: string;
  /** The waiting run the decisions resume; follow it with {@link FleetClient.events}. */
  runId: string;
  /** The ids of the decisions submitted. */
  applied: string[];
  /** The ids of decisions applied before: nothing to do for them. */
  ignored: string[];
  /** The tickets that stay open after these decisions: the run resumes once none does. */
  openTickets: SuspensionTicket[];
  /**
   * The id of the run's last logged event before the submission (`'0'` when none): following the run after it
   * shows what the decisions did. Set when they were submitted.
   */
  after?: string;
}

/**
 * The front of a fleet: what an HTTP server (any number of them) does for its clients without running anything
 * itself. It submits input and decisions to the dispatcher (durable once the call resolves; a worker applies
 * them in order), requests cancels that reach the worker running the thread, and follows a run's events from
 * any process, from the start or after the last event id a client saw. A client that stops following only
 * detaches: the run goes on.
 */
export class FleetClient {
  private readonly dispatcher: Dispatcher;
  private readonly store: LunationStore;
  private readonly ids: IdSource;

  constructor(options: FleetClientOptions) {
    assertSpecificationVersion('dispatcher', options.dispatcher, `dispatcher "${options.dispatcher.kind}"`);
    assertSpecificationVersion('store', options.store, `store "${options.store.kind}"`);
    this.dispatcher = options.dispatcher;
    this.store = options.store;
    this.ids = options.ids ?? systemIds;
  }

  /** Submits new input: a new run with `runId` starts once the thread's earlier submissions are done. */
  async send(options: FleetSendOptions): Promise<FleetSubmission> {
    const input = normaliseInput(options.input);
    if (input.length === 0) throw new LunationError('invalid-argument', 'send() needs input');
    const runId = options.runId ?? this.ids.id();
    if (options.runId !== undefined) {
      // A retried send names the run it started: the worker applies it once. Another thread's run is refused.
      const existing = await this.store.getRun(options.runId);
      if (existing !== undefined && existing.identity.threadId !== options.threadId) {
        throw new LunationError('store-conflict', `Run "${options.runId}" belongs to another thread`, {
          details: { runId: options.runId, threadId: options.threadId },
        });
      }
    }
    await this.createThread(options.threadId, options.resourceId);
    const submissionId = this.ids.id();
    const submitted = await this.dispatcher.submit({
      id: submissionId,
      threadId: options.threadId,
      ...(options.resourceId === undefined ? {} : { resourceId: options.resourceId }),
      request: {
        type: 'input',
        input,
        runId,
        ...(options.agentId === undefined ? {} : { agentId: options.agentId }),
        ...(options.frontendTools === undefined ? {} : { frontendTools: options.frontendTools }),
      },
    });
    if (submitted.deadLettered === true) throw deadLettered(options.threadId, submissionId, runId);
    return { submissionId, runId };
  }

  /**
   * Submits decisions for the thread's open tickets, as `caller` (a thread not theirs is `not-found`); the
   * waiting run they resume keeps its id, so its events continue in the same log. `not-found` when the thread
   * has no run waiting for decisions. The decisions are admitted against the store as the runtime admits them
   * (`unknown-ticket`, `decision-invalid`; those applied before are ignored), before anything is submitted; the
   * worker admits them again under the thread's lease.
   */
  async decide(
    threadId: string,
    decisions: ResumeDecision[],
    caller: ThreadCaller = {},
  ): Promise<FleetDecision> {
    validateDecisionShapes(decisions);
    const { store } = this;
    const [thread, threadState, latest] = await Promise.all([
      store.getThread(threadId),
      store.getThreadState(threadId),
      store.getLatestRun(threadId),
    ]);
    if (thread === undefined || !ownsThread(thread, caller)) {
      throw new LunationError('not-found', `Thread "${threadId}" does not exist for this owner`);
    }
    if (latest?.status !== 'waiting' || latest.openTickets.length === 0) {
      throw new LunationError('not-found', `Thread "${threadId}" has no run waiting for decisions`, {
        details: { threadId, status: latest?.status },
      });
    }
    const runId = latest.identity.runId;
    const { fresh, ignored, open, undecided } = admitDecisions(threadState, decisions);
    if (fresh.length === 0) return { runId, applied: [], ignored, openTickets: open };
    const after = await this.lastEventId(runId);
    const submissionId = this.ids.id();
    const submitted = await this.dispatcher.submit({
      id: submissionId,
      threadId,
      request: { type: 'decisions', decisions: fresh },
    });
    if (submitted.deadLettered === true) throw deadLettered(threadId, submissionId, runId);
    const applied = fresh.map((decision) => decision.decisionId);
    return { submissionId, runId, applied, ignored, openTickets: undecided, after };
  }

  /**
   * Cancels the thread's current run (or `runId`), whichever worker runs it, durably: the request names the run,
   * so it can never reach a later run of the thread. A running (or submitted) run is stopped by the worker that
   * holds the thread; a run waiting for decisions is ended now — its open tickets are declined and nothing of it
   * runs afterwards. A run that had already ended is left as it is (`cancelled: false`).
   */
  async cancel(threadId: string, options: FleetCancelOptions = {}): Promise<FleetCancel> {
    const reason = options.reason ?? 'cancelled';
    const runId = options.runId ?? (await this.currentRun(threadId));
    if (runId === undefined) return { cancelled: false };
    let run = await this.store.getRun(runId);
    if (run === undefined && options.runId !== undefined) {
      // A run the store does not have is cancelled only while its submission waits in the inbox (the inbox is read
      // first: a submission acknowledged meanwhile has its run in the store by then). Else there is no such run —
      // its thread was deleted, or it never existed — and nothing is cancelled.
      const pending = await this.dispatcher.pending(threadId);
      const queued = pending.some(({ request }) => request.type === 'input' && request.runId === runId);
      run = await this.store.getRun(runId);
      if (!queued && run === undefined) return { cancelled: false, runId };
    }
    if (run !== undefined && run.identity.threadId !== threadId) {
      throw new LunationError('not-found', `Thread "${threadId}" has no run "${runId}"`);
    }
    if (run?.status === 'done') {
      return { cancelled: false, runId, ...(run.termination ? { termination: run.termination } : {}) };
    }
    const request = await this.dispatcher.requestCancel({ threadId, runId, reason });
    if (run?.status === 'waiting' && run.openTickets.length > 0) {
      // Nobody holds a waiting thread: declining its tickets wakes a worker, which ends the run cancelled.
      const decisions = run.openTickets.map(
        (ticket): ResumeDecision => ({
          decisionId: this.ids.id(),
          ticketId: ticket.id,
          action: 'cancel',
          reason,
        }),
      );
      const id = this.ids.id();
      await this.dispatcher.submit({ id, threadId, request: { type: 'decisions', decisions } });
    }
    return { cancelled: true, runId, requestId: request.id };
  }

  /**
   * Deletes the thread with everything the store has of it, as `caller` (a thread not theirs is `not-found`);
   * false when it did not exist. Refused with `thread-busy` while a worker holds its lease or its inbox still
   * holds submissions: a submission not yet acknowledged is applied again by the next worker, and once the
   * thread is gone nothing shows it was applied — its run would start again from its input, tools and all.
   * Cancel the thread's run first, and retry once its work is done.
   */
  async deleteThread(threadId: string, caller: ThreadCaller = {}): Promise<boolean> {
    const { store, dispatcher } = this;
    const thread = await store.getThread(threadId);
    if (thread === undefined) return false;
    if (!ownsThread(thread, caller)) {
      throw new LunationError('not-found', `Thread "${threadId}" does not exist for this owner`);
    }
    const lease = await store.getLease(threadId);
    if (lease !== undefined) {
      throw new LunationError(
        'thread-busy',
        `Thread "${threadId}" has an active run (run ${lease.runId}); cancel it, then delete the thread`,
        { details: { threadId, runId: lease.runId } },
      );
    }
    const pending = await dispatcher.pending(threadId);
    if (pending.length > 0) {
      throw new LunationError(
        'thread-busy',
        `Thread "${threadId}" has ${pending.length} submission(s) a worker has not finished with; retry the delete once they are done (cancel its run to hurry it)`,
        { details: { threadId, pending: pending.length } },
      );
    }
    return store.deleteThread(threadId);
  }

  /**
   * Creates the thread unless it is in the store: a worker never creates one, so a submission delivered late,
   * after its thread was deleted, starts nothing (it is dropped as `not-found`) instead of bringing it back.
   */
  private async createThread(threadId: string, resourceId: string | undefined): Promise<void> {
    try {
      await this.store.createThread(
        resourceId === undefined ? { id: threadId } : { id: threadId, resourceId },
      );
    } catch (error) {
      if (!LunationError.hasCode(error, 'store-conflict')) throw error;
    }
  }

  /** The run a cancel of the thread means: its latest run unless that ended, else the newest one submitted. */
  private async currentRun(threadId: string): Promise<string | undefined> {
    const latest = await this.store.getLatestRun(threadId);
    if (latest !== undefined && latest.status !== 'done') return latest.identity.runId;
    const pending = await this.dispatcher.pending(threadId);
    for (let index = pending.length - 1; index >= 0; index--) {
      const { request } = pending[index] as InboxEntry;
      if (request.type === 'input' && request.runId !== undefined) {
        if ((await this.store.getRun(request.runId))?.status !== 'done') return request.runId;
      }
    }
    return latest?.identity.runId;
  }

  /** The id of the run's last logged event, or `'0'`. */
  private async lastEventId(runId: string): Promise<string> {
    let last = '0';
    for (;;) {
      const page = await this.dispatcher.readEvents(runId, { after: last });
      const tail = page.events.at(-1);
      if (!tail) return last;
      last = tail.id;
    }
  }

  /** The run's events, each once and in order, from the start or after `after`, until its `run-end`. */
  events(runId: string, options: SubscribeEventsOptions): AsyncIterable<RunEventRecord> {
    return untilRunEnd(this.dispatcher.subscribeEvents(runId, options));
  }
}

/** The thread was given up after failing repeatedly: the submission waits until an operator resubmits it. */
function deadLettered(threadId: string, submissionId: string, runId: string): LunationError {
  return new LunationError(
    'dead-lettered',
    `Thread "${threadId}" is dead-lettered: its work failed repeatedly and was given up. The submission is kept and runs once an operator resubmits the thread (see the dispatcher's dead letters).`,
    { details: { threadId, submissionId, runId } },
  );
}

/** Ends a run's event subscription after its `run-end` event (a waiting run's log stays open for its resume). */
async function* untilRunEnd(records: AsyncIterable<RunEventRecord>): AsyncGenerator<RunEventRecord> {
  for await (const record of records) {
    yield record;
    if (record.event.type === 'run-end') return;
  }
}
