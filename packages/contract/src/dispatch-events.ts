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

/** What {@link RunEventLog.appendEvents} takes. */
export interface AppendEventsOptions {
  /** The fencing token of the thread lease the events were produced under. */
  fence?: number;
}

/** What {@link RunEventLog.endEvents} takes. */
export interface EndEventsOptions {
  /** How long the ended log stays readable. */
  ttlMs: number;
  /** The fencing token of the thread lease the run ended under. */
  fence?: number;
}

/**
 * Each run's events, readable from any process: appended by the worker running the run, read or followed by
 * anyone, bounded in length, expiring after the run's end is marked. The store stays the truth; the log is a
 * view of it for clients.
 */
export interface RunEventLog {
  /** Appends events in order; resolves their ids, in the same order. Appending after `endEvents` reopens the log. */
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
   * after that starts a new log (ids from 1 again).
   */
  endEvents(runId: string, options: EndEventsOptions): Promise<void>;
}
