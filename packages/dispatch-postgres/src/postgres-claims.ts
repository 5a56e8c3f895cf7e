import type { DispatchClaim } from '@lunation/contract';
import { serverNowMs } from '@lunation/contract/postgres-utils';
import { claimToken, clearClaim, jobAttemptOf } from './claim-token.js';
import type { DispatchContext } from './dispatch-context.js';
import { inTransaction, Rollback, type Transaction } from './postgres-connection.js';
import { hasPending } from './postgres-inbox.js';
import { Waker } from './waker.js';

/** The first key of a tenant's advisory lock while a claim checks its cap: "LnTr" in ASCII. */
const tenantLockKey = 0x4c6e5472;
/** Lost claims taken back per claim transaction. */
const sweepBatch = 20;
/** Claim transactions tried in a row when the fetched thread's row is busy (a submission holds it). */
const contendedRounds = 10;
/** The shortest pause of a waiting claim, so that a lock being taken back elsewhere is not polled hot. */
const shortestPauseMs = 5;

interface Attempt {
  claim?: DispatchClaim;
  /** When nothing was claimable: how soon a delay or a lock runs out (ms), if anything is due. */
  dueInMs?: number;
  contended?: boolean;
}

/**
 * Taking claims: a claim is one transaction that first takes back lost claims (locks that ran out), then fetches
 * the oldest claimable job with pg-boss (skipping tenants at their cap) and records the claim's lock on the
 * thread's row. Waiting claims sleep until a NOTIFY, the next due delay or lock, or the poll interval.
 */
export class PostgresClaims {
  readonly #context: DispatchContext;
  readonly #waker: Waker;
  #listening: Promise<unknown> | undefined;

  constructor(context: DispatchContext) {
    this.#context = context;
    this.#waker = new Waker(context.clock);
  }

  async claim(
    workerId: string,
    lockMs: number,
    waitMs: number,
    signal: AbortSignal,
  ): Promise<DispatchClaim | undefined> {
    const { clock } = this.#context;
    const deadline = clock.now() + waitMs;
    if (waitMs > 0) await this.#listenForWakes();
    for (;;) {
      const version = this.#waker.version;
      const attempt = await this.#attempt(workerId, lockMs, waitMs > 0);
      if (attempt.claim !== undefined) return attempt.claim;
      const remaining = deadline - clock.now();
      if (remaining <= 0 || signal.aborted) return undefined;
      const due = Math.max(shortestPauseMs, attempt.dueInMs ?? Number.POSITIVE_INFINITY);
      await this.#waker.wait(
        version,
        Math.min(remaining, due, this.#context.settings.pollIntervalMs),
        signal,
      );
      if (signal.aborted) return undefined;
    }
  }

  /** Takes back lost claims now (as every claim does first); for figures that must not count them. */
  sweep(): Promise<void> {
    return inTransaction(this.#context.pool, (transaction) => this.#sweep(transaction));
  }

  #listenForWakes(): Promise<unknown> {
    this.#listening ??= this.#context.hub
      .listen(this.#context.channels.wake, () => this.#waker.wake())
      .catch((error: unknown) => {
        this.#listening = undefined;
        throw error;
      });
    return this.#listening;
  }

  async #attempt(workerId: string, lockMs: number, wantDue: boolean): Promise<Attempt> {
    for (let round = 0; round < contendedRounds; round++) {
      const attempt = await inTransaction(this.#context.pool, (transaction) =>
        this.#claimIn(transaction, workerId, lockMs, wantDue),
      );
      if (!attempt.contended) return attempt;
      await this.#context.clock.sleep(round + 1);
    }
    return { dueInMs: shortestPauseMs };
  }

  async #claimIn(
    transaction: Transaction,
    workerId: string,
    lockMs: number,
    wantDue: boolean,
  ): Promise<Attempt> {
    const { s, schema, jobs, policy } = this.#context;
    await this.#sweep(transaction);
    const job = await jobs.fetch(transaction, policy.maxActivePerResource);
    if (job === undefined) return wantDue ? { dueInMs: await this.#dueIn(transaction) } : {};
    const token = claimToken(job);
    // SKIP LOCKED: a submission holding the row may be waiting for this job's row, so never wait for it here.
    const { rows } = await transaction.query(
      `UPDATE ${s}.dispatch_threads SET resource_id = $2, claim_token = $3, worker_id = $4, claimed_at = now.ms,
         lock_ms = $5, lock_expires_at = now.ms + $5
       FROM (SELECT ${serverNowMs} AS ms) now
       WHERE thread_id = (SELECT thread_id FROM ${s}.dispatch_threads WHERE thread_id = $1 FOR UPDATE SKIP LOCKED)
       RETURNING failures, claimed_at::float8 AS claimed_at`,
      [job.threadId, job.resourceId ?? null, token, workerId, lockMs],
    );
    if (rows.length === 0) throw new Rollback<Attempt>({ contended: true });
    const cap = policy.maxActivePerResource;
    if (job.resourceId !== undefined && Number.isFinite(cap)) {
      // pg-boss's group cap reads committed claims; two claims racing for one tenant are settled here.
      await transaction.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [
        tenantLockKey,
        `${schema}:${job.resourceId}`,
      ]);
      const { rows: counted } = await transaction.query(
        `SELECT count(*)::int AS active FROM ${s}.dispatch_threads
         WHERE resource_id = $1 AND claim_token IS NOT NULL AND thread_id <> $2`,
        [job.resourceId, job.threadId],
      );
      if ((counted[0].active as number) >= cap) throw new Rollback<Attempt>({ contended: true });
    }
    return {
      claim: {
        threadId: job.threadId,
        ...(job.resourceId === undefined ? {} : { resourceId: job.resourceId }),
        workerId,
        attempt: (rows[0].failures as number) + 1,
        token,
        claimedAt: rows[0].claimed_at as number,
      },
    };
  }

  /** How soon (ms) the next delayed job is due or the next lock runs out; undefined when nothing is. */
  async #dueIn(transaction: Transaction): Promise<number | undefined> {
    const { s, jobs } = this.#context;
    const { rows } = await transaction.query(
      `SELECT (least(
         (SELECT floor(extract(epoch FROM min(start_after)) * 1000) FROM ${s}.job
          WHERE name = $1 AND state < 'active' AND start_after > ${s}.job_now()),
         (SELECT min(lock_expires_at) FROM ${s}.dispatch_threads WHERE lock_expires_at IS NOT NULL)
       ) - ${serverNowMs})::float8 AS due`,
      [jobs.queue],
    );
    return (rows[0].due as number | null) ?? undefined;
  }

  /**
   * Takes back claims whose lock ran out: the attempt is cancelled and the job resumed (first in line). A lost
   * claim is never a failure, however often it happens: `lost_claims` only counts them for operators.
   */
  async #sweep(transaction: Transaction): Promise<void> {
    const { s, jobs, channels } = this.#context;
    const { rows } = await transaction.query(
      `SELECT thread_id, resource_id, claim_token FROM ${s}.dispatch_threads WHERE lock_expires_at <= ${serverNowMs}
       ORDER BY lock_expires_at LIMIT ${sweepBatch} FOR UPDATE SKIP LOCKED`,
    );
    for (const row of rows) {
      const threadId = row.thread_id as string;
      const back = await jobs.putBack(transaction, jobAttemptOf(row.claim_token as string));
      await transaction.query(
        `UPDATE ${s}.dispatch_threads SET ${clearClaim}, lost_claims = lost_claims + 1 WHERE thread_id = $1`,
        [threadId],
      );
      // pg-boss itself failed the job (its 24 h expiry): the thread needs a new one.
      if (!back && (await hasPending(transaction, s, threadId))) {
        await jobs.wake(transaction, threadId, (row.resource_id as string | null) ?? undefined);
      }
      transaction.notify(channels.wake);
    }
  }
}
