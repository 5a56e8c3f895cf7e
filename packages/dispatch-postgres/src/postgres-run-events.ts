import type { AgentEvent, RunEventPage, RunEventRecord } from '@lunation/contract';
import { eventLogEndedError, staleEventFenceError } from '@lunation/contract/dispatch-utils';
import { serverNowMs } from '@lunation/contract/postgres-utils';
import type { DispatchContext } from './dispatch-context.js';
import { Waker } from './waker.js';

/** Events read per round by a subscription. */
const subscriptionBatch = 1_000;

/**
 * Run event logs: a row per run (last id given, end mark, expiry, fence and position) and a row per event, ids
 * `1, 2, …` per run. An append is one statement (the function `dispatch_append_events`): it takes the run's row
 * lock, checks the end mark and the fence, drops events already taken under the fence, numbers the rest, trims
 * the log to `maxEventsPerRun` and NOTIFYs the run's channel. A log whose expiry has passed reads as gone (an
 * append then starts it again from id 1); maintenance deletes it.
 */
export class PostgresRunEvents {
  readonly #context: DispatchContext;

  constructor(context: DispatchContext) {
    this.#context = context;
  }

  /** Appends under the contract's fencing rules, in one statement; resolves the ids of the events it appended. */
  async append(runId: string, events: readonly AgentEvent[], fence: number | undefined): Promise<string[]> {
    const { s, policy, channels } = this.#context;
    const { rows } = await this.#context.pool.query(
      `SELECT status, log_fence::float8 AS log_fence, ids::text[] AS ids
       FROM ${s}.dispatch_append_events($1, $2::json, $3, $4, $5)`,
      [runId, JSON.stringify(events), fence ?? null, policy.maxEventsPerRun, channels.events(runId)],
    );
    const {
      status,
      log_fence: logFence,
      ids,
    } = rows[0] as {
      status: number;
      log_fence: number | null;
      ids: string[] | null;
    };
    if (status === 1) throw eventLogEndedError(runId);
    if (status === 2) throw staleEventFenceError(runId, fence as number, logFence as number);
    return ids ?? [];
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

  async end(runId: string, ttlMs: number, fence: number | undefined): Promise<void> {
    const { s, channels } = this.#context;
    const { rows } = await this.#context.pool.query(
      `SELECT status, log_fence::float8 AS log_fence FROM ${s}.dispatch_end_events($1, $2, $3, $4)`,
      [runId, ttlMs, fence ?? null, channels.events(runId)],
    );
    if (rows[0].status === 2) throw staleEventFenceError(runId, fence as number, rows[0].log_fence as number);
  }

  /**
   * Every event after `after`, then each new one, until the end mark or `signal`. The run's channel is LISTENed
   * before the first read and a notification that comes during a read is kept, so nothing appended between a
   * read and the wait after it is missed; the poll interval bounds a wait if a notification is lost.
   */
  async *subscribe(runId: string, after: number, signal: AbortSignal): AsyncGenerator<RunEventRecord> {
    if (signal.aborted) return;
    const waker = new Waker(this.#context.clock);
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
