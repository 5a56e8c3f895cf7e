import type { CancelRequest, CancelRequestInput, CancelWatch } from '@lunation/contract';
import { serverNowMs } from '@lunation/contract/postgres-utils';
import type { DispatchContext } from './dispatch-context.js';

interface Watch {
  threadId: string;
  listener: (request: CancelRequest) => void;
  seen: Set<string>;
}

/**
 * Cancel requests: one row per thread and run named (a newer request for the same run replaces it) plus a NOTIFY on the schema's cancel channel
 * with the thread id, in the same statement. Watches of one dispatcher share one LISTEN; a notification (or a
 * reconnect) re-reads the thread's requests and tells each watch of each request id it has not seen.
 */
export class PostgresCancels {
  readonly #context: DispatchContext;
  readonly #watches = new Map<string, Set<Watch>>();
  /** Reads of one thread's request, chained so that watches learn of requests in the order they were made. */
  readonly #reads = new Map<string, Promise<void>>();
  #unlisten: Promise<() => Promise<void>> | undefined;

  constructor(context: DispatchContext) {
    this.#context = context;
  }

  async request(input: CancelRequestInput): Promise<CancelRequest> {
    const { s, channels } = this.#context;
    const id = this.#context.ids.id();
    const { rows } = await this.#context.pool.query(
      `WITH saved AS (
         INSERT INTO ${s}.dispatch_cancels (thread_id, run_key, id, run_id, reason, requested_at)
         VALUES ($1, coalesce($3, ''), $2, $3, $4, ${serverNowMs})
         ON CONFLICT (thread_id, run_key) DO UPDATE SET id = excluded.id, run_id = excluded.run_id, reason = excluded.reason,
           requested_at = excluded.requested_at
         RETURNING requested_at
       )
       SELECT requested_at::float8 AS requested_at, pg_notify($5, $1) FROM saved`,
      [input.threadId, id, input.runId ?? null, input.reason, channels.cancel],
    );
    return {
      id,
      threadId: input.threadId,
      ...(input.runId === undefined ? {} : { runId: input.runId }),
      reason: input.reason,
      requestedAt: rows[0].requested_at as number,
    };
  }

  /** The thread's requests, oldest first. */
  async list(threadId: string): Promise<CancelRequest[]> {
    const { rows } = await this.#context.pool.query(
      `SELECT id, run_id, reason, requested_at::float8 AS requested_at FROM ${this.#context.s}.dispatch_cancels
       WHERE thread_id = $1 ORDER BY requested_at, id`,
      [threadId],
    );
    return rows.map((row) => ({
      id: row.id as string,
      threadId,
      ...(row.run_id === null ? {} : { runId: row.run_id as string }),
      reason: row.reason as string,
      requestedAt: row.requested_at as number,
    }));
  }

  async clear(threadId: string, requestId: string | undefined): Promise<boolean> {
    const { rowCount } = await this.#context.pool.query(
      `DELETE FROM ${this.#context.s}.dispatch_cancels WHERE thread_id = $1 AND ($2::text IS NULL OR id = $2)`,
      [threadId, requestId ?? null],
    );
    return (rowCount ?? 0) > 0;
  }

  async watch(threadId: string, listener: (request: CancelRequest) => void): Promise<CancelWatch> {
    const watch: Watch = { threadId, listener, seen: new Set() };
    let watches = this.#watches.get(threadId);
    if (watches === undefined) {
      watches = new Set();
      this.#watches.set(threadId, watches);
    }
    watches.add(watch);
    try {
      await this.#listen();
      await this.#read(threadId);
    } catch (error) {
      this.#remove(watch);
      throw error;
    }
    return { close: () => this.#remove(watch) };
  }

  /** Stops every watch of this dispatcher. */
  async close(): Promise<void> {
    this.#watches.clear();
    const unlisten = await this.#unlisten?.catch(() => undefined);
    this.#unlisten = undefined;
    await unlisten?.();
  }

  #listen(): Promise<unknown> {
    this.#unlisten ??= this.#context.hub.listen(this.#context.channels.cancel, (threadId) => {
      const threads = threadId === undefined ? [...this.#watches.keys()] : [threadId];
      for (const thread of threads) {
        if (this.#watches.has(thread)) this.#read(thread).catch(this.#context.reportError);
      }
    });
    this.#unlisten.catch(() => {
      this.#unlisten = undefined;
    });
    return this.#unlisten;
  }

  /** Reads the thread's requests and tells each of its watches, once per request id. */
  #read(threadId: string): Promise<void> {
    const previous = this.#reads.get(threadId) ?? Promise.resolve();
    const next = previous
      .catch(() => undefined)
      .then(async () => {
        for (const request of await this.list(threadId)) {
          for (const watch of [...(this.#watches.get(threadId) ?? [])]) {
            if (watch.seen.has(request.id)) continue;
            watch.seen.add(request.id);
            try {
              watch.listener(request);
            } catch (error) {
              this.#context.reportError(error);
            }
          }
        }
      });
    this.#reads.set(threadId, next);
    next
      .finally(() => {
        if (this.#reads.get(threadId) === next) this.#reads.delete(threadId);
      })
      .catch(() => undefined);
    return next;
  }

  #remove(watch: Watch): void {
    const watches = this.#watches.get(watch.threadId);
    if (watches === undefined) return;
    watches.delete(watch);
    if (watches.size === 0) this.#watches.delete(watch.threadId);
  }
}
