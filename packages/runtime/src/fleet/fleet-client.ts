import {
  assertSpecificationVersion,
  type CancelRequest,
  type Dispatcher,
  LunationError,
  type LunationStore,
  type ResumeDecision,
  type RunEventRecord,
  type SubscribeEventsOptions,
} from '@lunation/contract';
import { normaliseInput, type RunInput, validateDecisionShapes } from '../executor/run-options.js';
import { createId } from '../id.js';
import type { FrontendTool } from '../loop/run-scope.js';

/** What {@link FleetClient} takes. */
export interface FleetClientOptions {
  /** Where submissions go and run events come from: the workers' dispatcher. */
  dispatcher: Dispatcher;
  /** The store the workers share: read for the runs that decisions resume. */
  store: LunationStore;
}

/** What {@link FleetClient.send} takes. */
export interface FleetSendOptions {
  threadId: string;
  input: RunInput;
  /** @default the thread's active agent */
  agentId?: string;
  /** The tenant of a new thread (and of the per-tenant figures and cap). */
  resourceId?: string;
  /** The id of the run the input starts. @default a new id */
  runId?: string;
  /** Client-side tools for the run: a call suspends until a decision carries the client's result. */
  frontendTools?: FrontendTool[];
}

/** A submission made: its id and the run whose events tell what became of it. */
export interface FleetSubmission {
  submissionId: string;
  /** The run the submission starts or resumes; follow it with {@link FleetClient.events}. */
  runId: string;
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

  constructor(options: FleetClientOptions) {
    assertSpecificationVersion('dispatcher', options.dispatcher, `dispatcher "${options.dispatcher.kind}"`);
    assertSpecificationVersion('store', options.store, `store "${options.store.kind}"`);
    this.dispatcher = options.dispatcher;
    this.store = options.store;
  }

  /** Submits new input: a new run with `runId` starts once the thread's earlier submissions are done. */
  async send(options: FleetSendOptions): Promise<FleetSubmission> {
    const input = normaliseInput(options.input);
    if (input.length === 0) throw new LunationError('invalid-argument', 'send() needs input');
    const runId = options.runId ?? createId();
    const submissionId = createId();
    await this.dispatcher.submit({
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
    return { submissionId, runId };
  }

  /**
   * Submits decisions for the thread's open tickets; the waiting run they resume keeps its id, so its events
   * continue in the same log. `not-found` when the thread has no run waiting for decisions.
   */
  async decide(threadId: string, decisions: ResumeDecision[]): Promise<FleetSubmission> {
    validateDecisionShapes(decisions);
    const latest = await this.store.getLatestRun(threadId);
    if (latest?.status !== 'waiting' || latest.openTickets.length === 0) {
      throw new LunationError('not-found', `Thread "${threadId}" has no run waiting for decisions`, {
        details: { threadId, status: latest?.status },
      });
    }
    const submissionId = createId();
    await this.dispatcher.submit({ id: submissionId, threadId, request: { type: 'decisions', decisions } });
    return { submissionId, runId: latest.identity.runId };
  }

  /** Asks the worker running the thread to cancel its run (or only `runId`): fenced by that worker's lease. */
  cancel(threadId: string, options: { runId?: string; reason?: string } = {}): Promise<CancelRequest> {
    return this.dispatcher.requestCancel({
      threadId,
      reason: options.reason ?? 'cancelled',
      ...(options.runId === undefined ? {} : { runId: options.runId }),
    });
  }

  /** The run's events, each once and in order, from the start or after `after`, until its `run-end`. */
  events(runId: string, options: SubscribeEventsOptions): AsyncIterable<RunEventRecord> {
    return untilRunEnd(this.dispatcher.subscribeEvents(runId, options));
  }
}

/** Ends a run's event subscription after its `run-end` event (a waiting run's log stays open for its resume). */
async function* untilRunEnd(records: AsyncIterable<RunEventRecord>): AsyncGenerator<RunEventRecord> {
  for await (const record of records) {
    yield record;
    if (record.event.type === 'run-end') return;
  }
}
