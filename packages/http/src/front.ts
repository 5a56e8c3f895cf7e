import type { Message, ResumeDecision, RunEventRecord } from '@lunation/contract';

/** The caller's request on one of its threads, as a front sees it (ownership is checked before). */
export interface FrontRequest {
  threadId: string;
  /** Whose thread it is. */
  resource: string;
}

/** A run's events as a front streams them: each with its id in the run's log, ending after `run-end`. */
export interface RunStream {
  /** The run, when known before its first event. */
  runId: string | undefined;
  records: AsyncIterable<RunEventRecord>;
  /** Stops streaming to this client (it went away): the run goes on. */
  detach(): void;
  /** Sent before the records, without an id (a fleet's `run-submitted`). */
  first?: { event: string; data: unknown };
  /**
   * From `active`: the run's events before its current invocation (those before an approval, a decision or a
   * restart), so a UI message stream can replay the whole assistant message.
   */
  earlier?: RunEventRecord[];
  /** From `active`: the run is submitted and not stored yet (a fleet's, queued): its events come from its first. */
  unstarted?: boolean;
}

/** What {@link RunFront.send} takes besides the text. */
export interface FrontSendOptions {
  /** The run's id, chosen by the client so that a retried send starts one run. @default a new id */
  runId?: string;
}

/** A JSON answer of a front: status and body. */
export interface FrontAnswer {
  status: number;
  body: unknown;
}

/**
 * Where the API's run requests go: the runtime in this process ({@link LocalFront}) or a fleet's workers through
 * a dispatcher ({@link FleetFront}). A front runs or submits; the API turns its streams into HTTP answers.
 */
export interface RunFront {
  /**
   * Starts a run with the text and streams its events. With `options.runId` the send is idempotent: a run of
   * that id that exists already (a retried request) is streamed instead of starting another.
   */
  send(request: FrontRequest, text: string, options?: FrontSendOptions): Promise<RunStream>;
  /**
   * Continues the thread's run `runId`, which the store holds as `running` with no process on it (the run a fork
   * made with `continue` writes), and streams its events: its next step calls the model on the stored history.
   * Optional for a custom front: without it, `POST /threads/:id/fork` refuses `continue` (400).
   */
  continueRun?(request: FrontRequest, runId: string): Promise<RunStream>;
  /**
   * Answers open tickets: the resumed run's events, or a JSON answer while tickets stay open.
   * @throws 404 `not-found` when the caller does not own the thread (the front checks it, unlike other calls).
   */
  decide(request: FrontRequest, decisions: ResumeDecision[]): Promise<RunStream | FrontAnswer>;
  /**
   * Cancels the thread's active run, or only the run `runId` (a cancel naming its run never reaches a later one:
   * `cancelled: false` when that run is not active).
   */
  cancel(request: FrontRequest, runId?: string): Promise<FrontAnswer>;
  /**
   * The events of one of the thread's runs after `lastEventId` (a reconnecting client's), or from the start.
   * @throws HttpError 404 when the front cannot stream that run.
   */
  follow(request: FrontRequest, runId: string, lastEventId: string | undefined): Promise<RunStream>;
  /**
   * The events of the thread's active run from the start of its current invocation, with the events of its
   * earlier invocations in `earlier` (a fleet's: also a run submitted and not yet stored, `unstarted`);
   * undefined when none runs.
   */
  active(request: FrontRequest): Promise<RunStream | undefined>;
  /**
   * Input sent to the thread that its stored messages may not hold yet (`[]` when none): `LocalFront`'s is its
   * active run's, as the `run-start` of the current invocation logged it; `FleetFront`'s, the thread's input
   * submissions not yet acknowledged. A run's input joins the stored messages only with its first checkpoint,
   * after its first model call: until then a page's history (`GET /chat/:id/messages`) finds the question here.
   * Absent: not shown.
   */
  activeInput?(request: FrontRequest): Promise<Message[]>;
  /** Ends what the front runs or streams, for a shutdown. */
  close(): Promise<void>;
  /**
   * Deletes the thread for the API's `DELETE /threads/:id` (the API has checked the caller owns it). A fleet's
   * refuses with `thread-busy` while a worker holds the thread or its inbox holds submissions. Absent: the API
   * deletes from the store once no lease is held.
   */
  deleteThread?(request: FrontRequest): Promise<void>;
  /** The caller's dead-lettered threads (a fleet's: their work failed repeatedly and was given up). */
  deadLetters?(resource: string): Promise<FrontAnswer>;
  /** Makes the caller's dead-lettered thread run again: its kept submissions run in order. */
  resubmit?(request: FrontRequest): Promise<FrontAnswer>;
}

/** Whether a front's answer is a stream (else JSON). */
export function isRunStream(answer: RunStream | FrontAnswer): answer is RunStream {
  return 'records' in answer;
}
