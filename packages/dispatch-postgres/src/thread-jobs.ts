import { PgBoss } from 'pg-boss';
import type { BossDatabase, Transaction } from './postgres-connection.js';

/** What a thread's pg-boss job carries. */
export interface ThreadJobData {
  threadId: string;
}

/** A job as a claim fetched it: pg-boss's attempt fence is its id and `retryCount`. */
export interface FetchedJob {
  id: string;
  retryCount: number;
  threadId: string;
  resourceId: string | undefined;
}

/** pg-boss's fence for one claim of a job: the job and its `retry_count` when it was fetched. */
export interface JobAttempt {
  id: string;
  retryCount: number;
}

/** pg-boss's longest job expiry (24 h): an active job older than this is failed by pg-boss's monitor. */
export const longestJobSeconds = 86_400;

/**
 * The thread queue on pg-boss: one job per thread with work (the `exclusive` policy with the thread id as
 * singleton key allows one job per key in `created`, `retry` or `active`), fetched, settled and put back through
 * pg-boss's API inside the dispatcher's transactions.
 *
 * The job's `retryLimit` is 0: every pg-boss `fail` is final for the attempt, and the dispatcher decides whether
 * the thread is retried (`retry`, then `update` of `startAfter` to the contract's backoff) or dead-lettered
 * (left `failed`). A hand-back or a lost claim is not a failure: `cancel` the attempt, then `resume` the job.
 */
export class ThreadJobs {
  readonly boss: PgBoss;
  readonly queue: string;

  constructor(database: BossDatabase, schema: string, queue: string, onError: (error: unknown) => void) {
    this.queue = queue;
    this.boss = new PgBoss({
      db: database,
      schema,
      schedule: false,
      registerInstance: false,
      supervise: true,
      migrate: true,
    });
    this.boss.on('error', onError);
  }

  /** Installs or migrates pg-boss in the schema, and creates the thread queue when it is missing. */
  async start(): Promise<void> {
    await this.boss.start();
    if ((await this.boss.getQueue(this.queue)) === null) {
      await this.boss.createQueue(this.queue, {
        policy: 'exclusive',
        retryLimit: 0,
        expireInSeconds: longestJobSeconds,
        // A job waiting this long unclaimed is deleted by pg-boss; the repair sweep wakes its thread again.
        retentionSeconds: 30 * longestJobSeconds,
        deleteAfterSeconds: longestJobSeconds,
      });
    }
  }

  async stop(): Promise<void> {
    await this.boss.stop({ graceful: false, close: false });
  }

  /** Adds the thread's job unless it has one (queued or active): true when this call added it. */
  async wake(transaction: Transaction, threadId: string, resourceId: string | undefined): Promise<boolean> {
    const data: ThreadJobData = { threadId };
    const id = await this.boss.send(this.queue, data, {
      singletonKey: threadId,
      ...(resourceId === undefined ? {} : { group: { id: resourceId } }),
      db: transaction.boss,
    });
    return id !== null;
  }

  /** Claims the oldest claimable job, skipping tenants (groups) with `groupCap` active jobs. */
  async fetch(transaction: Transaction, groupCap: number): Promise<FetchedJob | undefined> {
    const [job] = await this.boss.fetch<ThreadJobData>(this.queue, {
      batchSize: 1,
      ...(Number.isFinite(groupCap) ? { groupConcurrency: groupCap } : {}),
      db: transaction.boss,
    });
    if (job === undefined) return undefined;
    return {
      id: job.id,
      retryCount: job.retryCount,
      threadId: job.data.threadId,
      resourceId: job.groupId ?? undefined,
    };
  }

  /** pg-boss's heartbeat for the attempt; false when the job is no longer active under it. */
  async touch(transaction: Transaction, attempt: JobAttempt): Promise<boolean> {
    const result = await this.boss.touch(this.queue, attempt, { db: transaction.boss });
    return affected(result) === 1;
  }

  /** Completes the attempt; false when the job is no longer active under it. */
  async complete(transaction: Transaction, attempt: JobAttempt): Promise<boolean> {
    const result = await this.boss.complete(this.queue, attempt, null, { db: transaction.boss });
    return affected(result) === 1;
  }

  /** Fails the attempt for good (`failed`, with `output`); false when the job is no longer active under it. */
  async fail(transaction: Transaction, attempt: JobAttempt, output: object): Promise<boolean> {
    const result = await this.boss.fail(this.queue, attempt, output, { db: transaction.boss });
    return affected(result) === 1;
  }

  /** Makes a failed job claimable again (pg-boss's `retry`) from `startAfter`; false when it is gone. */
  async retry(transaction: Transaction, jobId: string, startAfter?: Date): Promise<boolean> {
    const result = await this.boss.retry(this.queue, jobId, { db: transaction.boss });
    if (affected(result) !== 1) return false;
    if (startAfter !== undefined) await this.#startAfter(transaction, jobId, startAfter);
    return true;
  }

  /**
   * Ends the attempt without failing it and makes the job claimable again (`cancel`, then `resume`), from
   * `startAfter` when given; false when the job is no longer active under the attempt.
   */
  async putBack(transaction: Transaction, attempt: JobAttempt, startAfter?: Date): Promise<boolean> {
    const cancelled = await this.boss.cancel(this.queue, attempt, { db: transaction.boss });
    if (affected(cancelled) !== 1) return false;
    await this.boss.resume(this.queue, attempt.id, { db: transaction.boss });
    if (startAfter !== undefined) await this.#startAfter(transaction, attempt.id, startAfter);
    return true;
  }

  async #startAfter(transaction: Transaction, jobId: string, startAfter: Date): Promise<void> {
    await this.boss.update(this.queue, undefined, { id: jobId, startAfter, db: transaction.boss });
  }
}

/**
 * How many jobs a pg-boss settle call (`complete`, `fail`, `cancel`, `retry`, `touch`) changed. pg-boss reports
 * it as `affected` (0 when a fenced attempt is no longer active, as its `JobAttempt` documents) but types the
 * response as opaque; a response without the count is an error, never taken as success.
 */
function affected(response: object): number {
  const count = (response as { affected?: unknown }).affected;
  if (typeof count !== 'number') {
    throw new Error(
      `pg-boss answered a settle call without an "affected" count: ${JSON.stringify(response)}`,
    );
  }
  return count;
}
