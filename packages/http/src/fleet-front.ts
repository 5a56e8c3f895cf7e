import {
  type Dispatcher,
  type LunationStore,
  type Message,
  type ResumeDecision,
  type RunEventRecord,
  runEventIdSchema,
} from '@lunation/contract';
import { FleetClient } from '@lunation/fleet';
import { ownsThread } from '@lunation/runtime/internal';
import type { FrontAnswer, FrontRequest, FrontSendOptions, RunFront, RunStream } from './front.js';
import { HttpError } from './http-error.js';
import { threadCaller } from './token-auth.js';

/** Options of {@link FleetFront}. */
export interface FleetFrontOptions {
  /** The fleet's dispatcher: submissions, cancel requests and run event logs. */
  dispatcher: Dispatcher;
  /** The fleet's store (the same the workers use). */
  store: LunationStore;
}

/**
 * Runs nothing here: submits to a fleet's workers through its dispatcher and streams the runs' logged events,
 * with ids, from any server of the fleet. A client that goes away detaches (its run goes on); it comes back with
 * `GET /threads/:id/runs/:runId/events` and `Last-Event-ID`, here or on another server.
 */
export class FleetFront implements RunFront {
  private readonly client: FleetClient;
  private readonly dispatcher: Dispatcher;
  private readonly store: LunationStore;
  private readonly streams = new Set<AbortController>();

  constructor(options: FleetFrontOptions) {
    this.dispatcher = options.dispatcher;
    this.store = options.store;
    this.client = new FleetClient({ dispatcher: options.dispatcher, store: options.store });
  }

  async send(request: FrontRequest, text: string, options: FrontSendOptions = {}): Promise<RunStream> {
    const { runId } = await this.client.send({
      threadId: request.threadId,
      input: text,
      resourceId: request.resource,
      ...(options.runId === undefined ? {} : { runId: options.runId }),
    });
    return { ...this.stream(runId, undefined), first: { event: 'run-submitted', data: { runId } } };
  }

  async continueRun(request: FrontRequest, runId: string): Promise<RunStream> {
    // A `continue` submission, as the fleet's stranded-run scan files: a worker claims the thread and continues
    // the run. Its id names the run, so a retried request files it once.
    const submitted = await this.dispatcher.submit({
      id: `continue:${runId}`,
      threadId: request.threadId,
      resourceId: request.resource,
      request: { type: 'continue', runId },
    });
    if (submitted.deadLettered === true) {
      throw new HttpError(409, 'dead-lettered', `Thread "${request.threadId}" is dead-lettered`);
    }
    return { ...this.stream(runId, undefined), first: { event: 'run-submitted', data: { runId } } };
  }

  async decide(request: FrontRequest, decisions: ResumeDecision[]): Promise<RunStream | FrontAnswer> {
    const decided = await this.client.decide(request.threadId, decisions, threadCaller(request.resource));
    const { runId, applied, ignored, openTickets, after } = decided;
    if (decided.submissionId === undefined) return { status: 200, body: { applied, ignored, openTickets } };
    if (openTickets.length > 0) {
      // The run resumes once every ticket is decided: nothing to stream yet.
      return { status: 202, body: { submitted: applied.length, openTickets, runId } };
    }
    return this.stream(runId, after);
  }

  /**
   * Cancels the thread's current run, naming it (a cancel never reaches a later run): 202 while the worker holding
   * it stops it (a waiting run is ended at once); 200 `cancelled: false` with how it ended when it had ended.
   */
  async cancel({ threadId }: FrontRequest, runId?: string): Promise<FrontAnswer> {
    const outcome = await this.client.cancel(threadId, {
      reason: 'cancelled by the client',
      ...(runId === undefined ? {} : { runId }),
    });
    if (!outcome.cancelled) {
      return {
        status: 200,
        body: {
          cancelled: false,
          runId: outcome.runId ?? null,
          ...(outcome.termination ? { termination: outcome.termination } : {}),
        },
      };
    }
    return { status: 202, body: { cancelled: true, requestId: outcome.requestId, runId: outcome.runId } };
  }

  async deadLetters(resource: string): Promise<FrontAnswer> {
    const letters = await this.dispatcher.deadLetters({ limit: 100 });
    const caller = threadCaller(resource);
    const threads = await Promise.all(letters.map((letter) => this.store.getThread(letter.threadId)));
    const own = letters.filter((_, index) => {
      const thread = threads[index];
      return thread !== undefined && ownsThread(thread, caller);
    });
    return { status: 200, body: { deadLetters: own } };
  }

  async deleteThread({ threadId, resource }: FrontRequest): Promise<void> {
    // A submission not yet acknowledged would run again once its thread is gone: the client refuses until none is.
    await this.client.deleteThread(threadId, threadCaller(resource));
  }

  async resubmit({ threadId }: FrontRequest): Promise<FrontAnswer> {
    const resubmitted = await this.dispatcher.resubmit(threadId);
    return { status: resubmitted ? 202 : 200, body: { resubmitted, threadId } };
  }

  async follow(request: FrontRequest, runId: string, lastEventId: string | undefined): Promise<RunStream> {
    const run = await this.store.getRun(runId);
    if (run?.identity.threadId !== request.threadId) {
      throw new HttpError(
        404,
        'not-found',
        `Thread "${request.threadId}" has no run "${runId}" (a run just submitted is found once a worker starts it)`,
      );
    }
    if (lastEventId !== undefined && !runEventIdSchema.safeParse(lastEventId).success) {
      throw new HttpError(
        400,
        'invalid-argument',
        `Last-Event-ID "${lastEventId}" is not an event id of this API`,
      );
    }
    return this.stream(runId, lastEventId);
  }

  /**
   * The thread's running run, or else the run of its first input submission no worker has stored yet (queued, or
   * before its first checkpoint): streamed from its first event, as a worker logs it.
   */
  async active({ threadId }: FrontRequest): Promise<RunStream | undefined> {
    const latest = await this.store.getLatestRun(threadId);
    if (latest?.status === 'running' || latest?.status === 'created') {
      const runId = latest.identity.runId;
      const { start, earlier } = await this.invocationStart(runId);
      return { ...this.stream(runId, start), earlier };
    }
    for (const { request } of await this.dispatcher.pending(threadId)) {
      if (request.type !== 'input' || request.runId === undefined) continue;
      if (request.runId === latest?.identity.runId || (await this.store.getRun(request.runId))) continue;
      return { ...this.stream(request.runId, undefined), earlier: [], unstarted: true };
    }
    return undefined;
  }

  /** The input of the thread's submissions not yet acknowledged: sent, and not yet stored by a worker's run. */
  async activeInput({ threadId }: FrontRequest): Promise<Message[]> {
    const inbox = await this.dispatcher.pending(threadId);
    return inbox.flatMap(({ request }) => (request.type === 'input' ? request.input : []));
  }

  async close(): Promise<void> {
    for (const stream of this.streams) stream.abort();
  }

  /** The run's events after `after` until its `run-end`, or until detached. */
  private stream(runId: string, after: string | undefined): RunStream {
    const detach = new AbortController();
    this.streams.add(detach);
    const streams = this.streams;
    const records = this.client.events(runId, { signal: detach.signal, ...(after ? { after } : {}) });
    return {
      runId,
      records: (async function* () {
        try {
          yield* records;
        } finally {
          streams.delete(detach);
        }
      })(),
      detach: () => detach.abort(),
    };
  }

  /**
   * The id before the run's last `run-start` (where its current invocation begins), or `'0'`, and the events
   * before it.
   */
  private async invocationStart(runId: string): Promise<{ start: string; earlier: RunEventRecord[] }> {
    let last = '0';
    let start = '0';
    const records: RunEventRecord[] = [];
    let earlier = 0;
    for (;;) {
      const page = await this.dispatcher.readEvents(runId, { after: last });
      for (const record of page.events) {
        if (record.event.type === 'run-start') {
          start = last;
          earlier = records.length;
        }
        records.push(record);
        last = record.id;
      }
      if (page.events.length === 0) return { start, earlier: records.slice(0, earlier) };
    }
  }
}
