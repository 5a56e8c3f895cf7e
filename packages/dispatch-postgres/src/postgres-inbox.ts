import type { InboxEntry, Submission, SubmitResult } from '@lunation/contract';
import { overloadedError, toJsonText } from '@lunation/contract/dispatch-utils';
import { serverNowMs } from '@lunation/contract/postgres-utils';
import type { DispatchContext } from './dispatch-context.js';
import { inTransaction, type Transaction } from './postgres-connection.js';

/**
 * Per-thread inboxes: submissions in submission order, acknowledged by id, deduplicated by id (pending, or
 * acknowledged within the dedupe window). A submission and its thread's wake-up are one transaction, under the
 * thread's row lock, which `complete` takes too: a submission racing a completion always leaves a job behind.
 */
export class PostgresInbox {
  readonly #context: DispatchContext;

  constructor(context: DispatchContext) {
    this.#context = context;
  }

  submit(submission: Submission): Promise<SubmitResult> {
    const { s, policy, jobs, channels } = this.#context;
    const stored: Submission = {
      id: submission.id,
      threadId: submission.threadId,
      ...(submission.resourceId === undefined ? {} : { resourceId: submission.resourceId }),
      request: submission.request,
    };
    const entry = toJsonText(stored, 'submission');
    return inTransaction(this.#context.pool, async (transaction) => {
      // The thread's row lock: submissions, claims and their release of one thread go one after another.
      const { rows: threads } = await transaction.query(
        `INSERT INTO ${s}.dispatch_threads (thread_id) VALUES ($1)
         ON CONFLICT (thread_id) DO UPDATE SET thread_id = excluded.thread_id
         RETURNING dead_at IS NOT NULL AS dead`,
        [submission.threadId],
      );
      const { rows: added } = await transaction.query(
        `INSERT INTO ${s}.dispatch_inbox (thread_id, submission_id, resource_id, entry, submitted_at)
         SELECT $1, $2, $3, $4::json, ${serverNowMs}
         WHERE NOT EXISTS (
           SELECT 1 FROM ${s}.dispatch_acknowledged
           WHERE thread_id = $1 AND submission_id = $2 AND acknowledged_at > ${serverNowMs} - $5
         )
         ON CONFLICT (thread_id, submission_id) DO NOTHING
         RETURNING submitted_at`,
        [submission.threadId, submission.id, submission.resourceId ?? null, entry, policy.dedupeWindowMs],
      );
      const deadLettered = threads[0].dead === true;
      if (added.length === 0) return { duplicate: true, deadLettered };
      if (Number.isFinite(policy.maxDepth)) {
        const { rows } = await transaction.query(
          `SELECT count(*)::int AS depth FROM (
             SELECT 1 FROM ${s}.job WHERE name = $1 AND state < 'active' LIMIT $2
           ) waiting`,
          [jobs.queue, policy.maxDepth],
        );
        const depth = rows[0].depth as number;
        if (depth >= policy.maxDepth) throw overloadedError(depth, policy.maxDepth);
      }
      if (!deadLettered && (await jobs.wake(transaction, submission.threadId, submission.resourceId))) {
        // The tenant of the submission that woke the thread is its tenant until the job ends.
        await transaction.query(`UPDATE ${s}.dispatch_threads SET resource_id = $2 WHERE thread_id = $1`, [
          submission.threadId,
          submission.resourceId ?? null,
        ]);
        transaction.notify(channels.wake);
      }
      return { duplicate: false, deadLettered };
    });
  }

  async pending(threadId: string): Promise<InboxEntry[]> {
    const { rows } = await this.#context.pool.query(
      `SELECT entry, submitted_at::float8 AS submitted_at FROM ${this.#context.s}.dispatch_inbox
       WHERE thread_id = $1 ORDER BY seq`,
      [threadId],
    );
    return rows.map((row) => ({ ...(row.entry as Submission), submittedAt: row.submitted_at as number }));
  }

  /** Removes these submissions (under the thread's row lock) and remembers their ids for the dedupe window. */
  async acknowledge(threadId: string, submissionIds: readonly string[]): Promise<number> {
    if (submissionIds.length === 0) return 0;
    const { s, policy } = this.#context;
    const { rows } = await this.#context.pool.query(
      `WITH thread AS (
         SELECT thread_id FROM ${s}.dispatch_threads WHERE thread_id = $1 FOR UPDATE
       ),
       removed AS (
         DELETE FROM ${s}.dispatch_inbox
         WHERE thread_id = $1 AND submission_id = ANY($2::text[]) AND EXISTS (SELECT 1 FROM thread)
         RETURNING submission_id
       ),
       remembered AS (
         INSERT INTO ${s}.dispatch_acknowledged (thread_id, submission_id, acknowledged_at)
         SELECT $1, submission_id, ${serverNowMs} FROM removed WHERE $3::bigint > 0
         ON CONFLICT (thread_id, submission_id) DO UPDATE SET acknowledged_at = excluded.acknowledged_at
       )
       SELECT count(*)::int AS removed FROM removed`,
      [threadId, [...submissionIds], policy.dedupeWindowMs],
    );
    return rows[0].removed as number;
  }
}

/** Whether the thread's inbox has submissions, read inside `transaction`. */
export async function hasPending(transaction: Transaction, s: string, threadId: string): Promise<boolean> {
  const { rows } = await transaction.query(
    `SELECT EXISTS (SELECT 1 FROM ${s}.dispatch_inbox WHERE thread_id = $1) AS pending`,
    [threadId],
  );
  return rows[0].pending === true;
}
