import type { AgentEvent, RunEventPage, RunEventRecord } from '@lunation/contract';
import type { DispatchContext } from './dispatch-context.js';
import { serverNowMs } from './dispatch-schema.js';
import { Waker } from './waker.js';

/** Events read per round by a subscription. */
const subscriptionBatch = 1_000;

/**
 * Run event logs: a row per run (last id given, end mark, expiry) and a row per event, ids `1, 2, …` per run.
 * An append is one statement: it takes the run's row lock, numbers the events, trims the log to
 * `maxEventsPerRun` and NOTIFYs the run's channel. A log whose expiry has passed reads as gone (an append then
 * starts it again from id 1); maintenance deletes it.
 */
export class PostgresRunEvents {
  readonly #context: DispatchContext;

  constructor(context: DispatchContext) {
    this.#context = context;
  }

  async append(runId: string, events: readonly AgentEvent[]): Promise<string[]> {
    if (events.length === 0) return [];
    const { s, policy, channels } = this.#context;
    // A log whose expiry has passed starts again from id 1: its old events are dropped before the new ones are
    // added (the insert reads the delete's count, so it runs after it).
    const { rows } = await this.#context.pool.query(
      `WITH log AS (
         INSERT INTO ${s}.dispatch_run_logs AS l (run_id, last_seq) VALUES ($1, $3)
         ON CONFLICT (run_id) DO UPDATE SET
           last_seq = CASE WHEN l.expires_at <= ${serverNowMs} THEN $3 ELSE l.last_seq + $3 END,
           ended_seq = NULL, expires_at = NULL
         RETURNING last_seq
       ), dropped AS (
         DELETE FROM ${s}.dispatch_run_events
         WHERE run_id = $1 AND (seq <= (SELECT last_seq FROM log) - $4 OR (SELECT last_seq FROM log) = $3)
         RETURNING seq
       ), added AS (
         INSERT INTO ${s}.dispatch_run_events (run_id, seq, event)
         SELECT $1, log.last_seq - $3 + e.ordinality, e.value
         FROM log, json_array_elements($2::json) WITH ORDINALITY AS e(value, ordinality)
         WHERE log.last_seq - $3 + e.ordinality > log.last_seq - $4 AND (SELECT count(*) FROM dropped) >= 0
       )
       SELECT last_seq::float8 AS last_seq, pg_notify($5, last_seq::text) FROM log`,
      [runId, JSON.stringify(events), events.length, policy.maxEventsPerRun, channels.events(runId)],
    );
    const last = rows[0].last_seq as number;
    return events.map((_, index) => String(last - events.length + 1 + index));
  }

  async read(runId: string, after: number, limit: number): Promise<RunEventPage> {
    const { s, policy } = this.#context;
    const { rows } = await this.#context.pool.query(
      `SELECT l.ended_seq IS NOT NULL AS ended, l.expires_at <= ${serverNowMs} AS expired,
         (SELECT max(seq) FROM ${s}.dispatch_run_events m WHERE m.run_id = l.run_id)::float8 AS last_kept,
         e.seq::text AS seq, e.event
       FROM ${s}.dispatch_run_logs l
       LEFT JOIN LATERAL (
         SELECT seq, event FROM ${s}.dispatch_run_events
         WHERE run_id = l.run_id AND seq > greatest($2, l.last_seq - $4) ORDER BY seq LIMIT $3
       ) e ON true
       WHERE l.run_id = $1`,
      [runId, after, limit, policy.maxEventsPerRun],
    );
    const head = rows[0];
    if (head === undefined || head.expired === true) return { events: [], ended: false };
    const events: RunEventRecord[] = rows
      .filter((row) => row.seq !== null)
      .map((row) => ({ id: row.seq as string, event: row.event as AgentEvent }));
    const reached = events.length > 0 ? Number(events[events.length - 1]!.id) : after;
    return { events, ended: head.ended === true && reached >= ((head.last_kept as number | null) ?? 0) };
  }

  async end(runId: string, ttlMs: number): Promise<void> {
    const { s, channels } = this.#context;
    // Ending a log whose expiry has passed ends a new, empty one.
    await this.#context.pool.query(
      `WITH log AS (
         INSERT INTO ${s}.dispatch_run_logs AS l (run_id, last_seq, ended_seq, expires_at)
         VALUES ($1, 0, 0, ${serverNowMs} + $2)
         ON CONFLICT (run_id) DO UPDATE SET
           last_seq = CASE WHEN l.expires_at <= ${serverNowMs} THEN 0 ELSE l.last_seq END,
           ended_seq = CASE WHEN l.expires_at <= ${serverNowMs} THEN 0 ELSE l.last_seq END,
           expires_at = ${serverNowMs} + $2
         RETURNING last_seq
       ), dropped AS (
         DELETE FROM ${s}.dispatch_run_events WHERE run_id = $1 AND (SELECT last_seq FROM log) = 0
       )
       SELECT pg_notify($3, last_seq::text) FROM log`,
      [runId, ttlMs, channels.events(runId)],
    );
  }

  /**
   * Every event after `after`, then each new one, until the end mark or `signal`. The run's channel is LISTENed
   * before the first read and a notification that comes during a read is kept, so nothing appended between a
   * read and the wait after it is missed; the poll interval bounds a wait if a notification is lost.
   */
  async *subscribe(runId: string, after: number, signal: AbortSignal): AsyncGenerator<RunEventRecord> {
    if (signal.aborted) return;
    const waker = new Waker();
    const unlisten = await this.#context.hub.listen(this.#context.channels.events(runId), () => waker.wake());
    try {
      let position = after;
      while (!signal.aborted) {
        const version = waker.version;
        const page = await this.read(runId, position, subscriptionBatch);
        for (const record of page.events) {
          if (signal.aborted) return;
          yield record;
          position = Number(record.id);
        }
        if (page.ended) return;
        if (page.events.length === subscriptionBatch) continue;
        await waker.wait(version, this.#context.settings.pollIntervalMs, signal);
      }
    } finally {
      await unlisten();
    }
  }
}
