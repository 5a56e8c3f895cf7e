import {
  type Dispatcher,
  type LunationStore,
  type ResumeDecision,
  runEventIdSchema,
} from '@lunation/contract';
import type { FleetClient } from '@lunation/runtime';
import { HttpError } from './http-error.js';
import { sendJson, sendRecordStream } from './http-io.js';
import type { FrontRequest, RunFront } from './run-front.js';

/**
 * Runs nothing here: submits to a fleet's workers through its dispatcher and streams the run's logged events,
 * with ids, from any server of the fleet. A client that goes away detaches (its run goes on); it comes back with
 * `GET /threads/:id/runs/:runId/events` and `Last-Event-ID`, here or on another server.
 */
export class FleetFront implements RunFront {
  private readonly streams = new Set<AbortController>();

  constructor(
    private readonly client: FleetClient,
    private readonly dispatcher: Dispatcher,
    private readonly store: LunationStore,
    private readonly heartbeatMs: number,
  ) {}

  async send(request: FrontRequest, text: string): Promise<void> {
    const { runId } = await this.client.send({
      threadId: request.threadId,
      input: text,
      resourceId: request.resource,
    });
    await this.stream(request, runId, undefined, { event: 'run-submitted', data: { runId } });
  }

  async decide(request: FrontRequest, decisions: ResumeDecision[]): Promise<void> {
    const latest = await this.store.getLatestRun(request.threadId);
    const open = latest?.status === 'waiting' ? latest.openTickets : [];
    const unknown = decisions.find((decision) => !open.some((ticket) => ticket.id === decision.ticketId));
    if (unknown) {
      throw new HttpError(
        400,
        'unknown-ticket',
        `Ticket "${unknown.ticketId}" is not open on thread "${request.threadId}"; open: ${open.map((ticket) => ticket.id).join(', ') || 'none'}`,
      );
    }
    const after = await this.lastEventId(latest!.identity.runId);
    const { runId } = await this.client.decide(request.threadId, decisions);
    const undecided = open.filter((ticket) => !decisions.some((decision) => decision.ticketId === ticket.id));
    if (undecided.length > 0) {
      // The run resumes once every ticket is decided: nothing to stream yet.
      sendJson(request.response, 202, { submitted: decisions.length, openTickets: undecided, runId });
      return;
    }
    await this.stream(request, runId, after);
  }

  async cancel({ response, threadId }: FrontRequest): Promise<void> {
    const latest = await this.store.getLatestRun(threadId);
    const request = await this.client.cancel(threadId, { reason: 'cancelled by the client' });
    sendJson(response, 202, {
      cancelled: true,
      requestId: request.id,
      runId: latest?.identity.runId ?? null,
    });
  }

  async follow(request: FrontRequest, runId: string, lastEventId: string | undefined): Promise<void> {
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
    await this.stream(request, runId, lastEventId);
  }

  async close(): Promise<void> {
    for (const stream of this.streams) stream.abort();
  }

  /** Streams the run's events after `after` until its `run-end`, or until the client goes away. */
  private async stream(
    { response }: FrontRequest,
    runId: string,
    after: string | undefined,
    first?: { event: string; data: unknown },
  ): Promise<void> {
    const detach = new AbortController();
    this.streams.add(detach);
    try {
      const records = this.client.events(runId, { signal: detach.signal, ...(after ? { after } : {}) });
      await sendRecordStream(response, records, {
        heartbeatMs: this.heartbeatMs,
        detach,
        ...(first ? { first } : {}),
      });
    } finally {
      this.streams.delete(detach);
    }
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
}
