import type { DeadLetter, DispatchDepth, ErrorInfo, ResourceDepth } from '@lunation/contract';
import type { DispatchContext } from './dispatch-context.js';
import { inTransaction } from './postgres-connection.js';
import { hasPending } from './postgres-inbox.js';

/**
 * Figures and dead letters. Thread states come from pg-boss's job table (waiting and delayed: `created` or
 * `retry` jobs, by `start_after`); claims, dead letters, pending submissions and totals from the dispatcher's
 * own tables.
 */
export class PostgresAdmin {
  readonly #context: DispatchContext;

  constructor(context: DispatchContext) {
    this.#context = context;
  }

  async depth(): Promise<DispatchDepth> {
    const { s, jobs, pool } = this.#context;
    const [{ rows: totals }, { rows: tenants }] = await Promise.all([
      pool.query(
        `SELECT
           (SELECT count(*) FROM ${s}.job
            WHERE name = $1 AND state < 'active' AND start_after <= ${s}.job_now())::int AS waiting,
           (SELECT count(*) FROM ${s}.job
            WHERE name = $1 AND state < 'active' AND start_after > ${s}.job_now())::int AS delayed,
           (SELECT count(*) FROM ${s}.dispatch_threads WHERE claim_token IS NOT NULL)::int AS active,
           (SELECT count(*) FROM ${s}.dispatch_threads WHERE dead_at IS NOT NULL)::int AS dead,
           (SELECT count(*) FROM ${s}.dispatch_inbox)::int AS pending,
           (SELECT coalesce(sum(value), 0) FROM ${s}.dispatch_counters WHERE name = 'completed')::float8 AS completed,
           (SELECT coalesce(sum(value), 0) FROM ${s}.dispatch_counters WHERE name = 'failed')::float8 AS failed`,
        [jobs.queue],
      ),
      pool.query(
        `SELECT resource_id, sum(pending)::int AS pending, sum(active)::int AS active, sum(dead)::int AS dead
         FROM (
           SELECT resource_id, count(*) AS pending, 0 AS active, 0 AS dead FROM ${s}.dispatch_inbox
           WHERE resource_id IS NOT NULL GROUP BY resource_id
           UNION ALL
           SELECT resource_id, 0, count(*), 0 FROM ${s}.dispatch_threads
           WHERE claim_token IS NOT NULL AND resource_id IS NOT NULL GROUP BY resource_id
           UNION ALL
           SELECT resource_id, 0, 0, count(*) FROM ${s}.dispatch_threads
           WHERE dead_at IS NOT NULL AND resource_id IS NOT NULL GROUP BY resource_id
         ) figures
         GROUP BY resource_id ORDER BY resource_id`,
      ),
    ]);
    const row = totals[0];
    const byResource: Record<string, ResourceDepth> = {};
    for (const tenant of tenants) {
      byResource[tenant.resource_id as string] = {
        pending: tenant.pending as number,
        active: tenant.active as number,
        deadLettered: tenant.dead as number,
      };
    }
    return {
      waiting: row.waiting as number,
      active: row.active as number,
      delayed: row.delayed as number,
      deadLettered: row.dead as number,
      pending: row.pending as number,
      completed: row.completed as number,
      failed: row.failed as number,
      byResource,
    };
  }

  async deadLetters(limit: number): Promise<DeadLetter[]> {
    const { s, pool } = this.#context;
    const { rows } = await pool.query(
      `SELECT t.thread_id, t.resource_id, t.dead_attempts, t.dead_error, t.dead_at::float8 AS dead_at,
         (SELECT count(*) FROM ${s}.dispatch_inbox i WHERE i.thread_id = t.thread_id)::int AS pending
       FROM ${s}.dispatch_threads t WHERE t.dead_at IS NOT NULL
       ORDER BY t.dead_at, t.thread_id LIMIT $1`,
      [limit],
    );
    return rows.map((row) => ({
      threadId: row.thread_id as string,
      ...(row.resource_id === null ? {} : { resourceId: row.resource_id as string }),
      attempts: row.dead_attempts as number,
      error: row.dead_error as ErrorInfo,
      deadLetteredAt: row.dead_at as number,
      pending: row.pending as number,
    }));
  }

  /**
   * Clears the dead letter and, when the inbox has submissions, makes the thread claimable: pg-boss's `retry` of
   * its failed job, or a new job when pg-boss has deleted that one.
   */
  resubmit(threadId: string): Promise<boolean> {
    const { s, jobs, channels } = this.#context;
    return inTransaction(this.#context.pool, async (transaction) => {
      const { rows } = await transaction.query(
        `WITH dead AS (
           SELECT thread_id, resource_id, dead_job_id FROM ${s}.dispatch_threads
           WHERE thread_id = $1 AND dead_at IS NOT NULL FOR UPDATE
         )
         UPDATE ${s}.dispatch_threads t SET dead_at = NULL, dead_attempts = NULL, dead_error = NULL,
           dead_job_id = NULL, failures = 0, lost_claims = 0
         FROM dead WHERE t.thread_id = dead.thread_id
         RETURNING dead.resource_id, dead.dead_job_id`,
        [threadId],
      );
      if (rows.length === 0) return false;
      if (await hasPending(transaction, s, threadId)) {
        const jobId = rows[0].dead_job_id as string | null;
        if (jobId === null || !(await jobs.retry(transaction, jobId))) {
          await jobs.wake(transaction, threadId, (rows[0].resource_id as string | null) ?? undefined);
        }
        transaction.notify(channels.wake);
      }
      return true;
    });
  }
}
