import { z } from 'zod';
import { type AgentEvent, agentEventSchema } from './events.js';

/**
 * The id of an event in its run's log: a decimal integer, strictly increasing within the run (not
 * necessarily consecutive). Compare ids as numbers; `'0'` stands for "before the first event".
 */
export const runEventIdSchema = z.string().regex(/^(0|[1-9][0-9]*)$/);

/** An event of a run's log with its id. */
export const runEventRecordSchema = z.object({
  id: runEventIdSchema,
  event: agentEventSchema,
});
/** An event of a run's log with its id; see {@link runEventRecordSchema}. */
export type RunEventRecord = z.infer<typeof runEventRecordSchema>;

/** What {@link RunEventLog.readEvents} takes. */
export interface ReadEventsOptions {
  /** Only events after this id. @default from the first event */
  after?: string;
  /** @default 1000 */
  limit?: number;
}

/** What {@link RunEventLog.readEvents} resolves with. */
export interface RunEventPage {
  events: RunEventRecord[];
  /** True when the log is ended and `events` reach its last event. */
  ended: boolean;
}

/** What {@link RunEventLog.subscribeEvents} takes. */
export interface SubscribeEventsOptions {
  /** Only events after this id (a client's `Last-Event-ID`). @default from the first event */
  after?: string;
  /** Ends the subscription (quietly: the iteration just stops). Nothing else bounds a wait for a run's events. */
  signal: AbortSignal;
}

/** What {@link RunEventLog.appendEvents} takes beside the events. */
export interface AppendEventsOptions {
  /**
   * The fencing token of the thread lease the events were produced under. The log refuses an append whose fence
   * is lower than the highest it has seen (`stale-lease`), and within one fence takes each event `seq` once.
   * @default no fence: nothing is checked but the end mark (for callers that hold no lease, such as tests)
   */
  fence?: number;
}

/** What {@link RunEventLog.endEvents} takes. */
export interface EndEventsOptions {
  /** How long the ended log stays readable. */
  ttlMs: number;
  /** The fencing token of the lease the run ended under; refused (`stale-lease`) when lower than the log's. */
  fence?: number;
}

/**
 * Each run's events, readable from any process: appended by the worker running the run, read or followed by
 * anyone, bounded in length, expiring after the run's end is marked. The store stays the truth; the log is a
 * view of it for clients.
 *
 * @remarks Fencing (each append is atomic: it is checked and applied in one step, or refused whole):
 * - The log remembers the highest `fence` it was given and the position `(fence, seq)` of the last event it took
 *   under it. An append or `endEvents` whose fence is lower is refused with `stale-lease` (details `{ runId,
 *   fence, logFence }`) and changes nothing: a newer lease of the thread has written to the log.
 * - Within one fence, events at or before the last position (the retry of an append whose answer was lost) are
 *   dropped silently and the others appended in order; a higher fence starts over (`seq` starts at 0 again in
 *   each invocation of a run).
 * - Nothing is appended after the end mark: an append to an ended log is refused with `stale-lease` (details
 *   `{ runId, ended: true }`), fenced or not, for as long as the ended log is kept (`ttlMs`). Once it expired,
 *   the run's log is forgotten with its fence, and an append starts a new log (ids from 1 again).
 * - An append without `fence` neither checks nor moves the position; only the end mark applies to it.
 * - An append of no events under a fence higher than the log's claims the log for it: from then on the lower
 *   fence is refused. A run's new holder does this before it reads what the log lacks, so the previous holder's
 *   appends still on their way (a stalled process's) cannot land between its read and its own appends.
 */
export interface RunEventLog {
  /**
   * Appends events in order, under the rules above; resolves the ids of the events it appended, in order (an
   * event dropped as already appended has none, so the result may be shorter than `events`). `stale-lease`
   * when the fence is lower than the log's or the log is ended; `invalid-argument` for a fence that is not a
   * non-negative integer, or, with a fence, an event without an integer `seq`.
   */
  appendEvents(
    runId: string,
    events: readonly AgentEvent[],
    options?: AppendEventsOptions,
  ): Promise<string[]>;
  /** Events after `after`, oldest first, at most `limit`. An unknown run reads as an empty log not ended. */
  readEvents(runId: string, options?: ReadEventsOptions): Promise<RunEventPage>;
  /**
   * Every event after `after`, then each new one, once and in order; ends after the log's end mark, when the
   * signal aborts or when the dispatcher closes.
   */
  subscribeEvents(runId: string, options: SubscribeEventsOptions): AsyncIterable<RunEventRecord>;
  /**
   * Marks the log's end (subscribers finish once they reach it); the log expires `ttlMs` later, and an append
   * after that starts a new log (ids from 1 again). Ending an ended log again sets a new expiry. `stale-lease`
   * when `fence` is lower than the log's.
   */
  endEvents(runId: string, options: EndEventsOptions): Promise<void>;
}
