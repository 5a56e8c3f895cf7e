import {
  type CompleteResult,
  type DispatchClaim,
  type FailOptions,
  type FailResult,
  LunationError,
  toErrorInfo,
} from '@lunation/contract';
import { claimLostError, dispatchRetryDelay } from '@lunation/contract/dispatch-utils';
import { serverNowMs } from '@lunation/contract/postgres-utils';
import { clearClaim, jobAttemptOf } from './claim-token.js';
import type { DispatchContext } from './dispatch-context.js';
import { inTransaction } from './postgres-connection.js';
import { hasPending } from './postgres-inbox.js';

/** The claim's row, matched by thread and token while its lock has not run out. */
const heldClaim = (s: string) =>
  `${s}.dispatch_threads.thread_id = $1 AND ${s}.dispatch_threads.claim_token = $2
   AND ${s}.dispatch_threads.lock_expires_at > now.ms`;

/** Adds one to a counter (`completed`, `failed`) on one of a few rows, so that settlements rarely queue on one. */
const countOne = (s: string, name: string) =>
  `INSERT INTO ${s}.dispatch_counters (name, shard, value)
   SELECT '${name}', floor(random() * 8)::smallint, 1 FROM released
   ON CONFLICT (name, shard) DO UPDATE SET value = ${s}.dispatch_counters.value + 1`;

/**
 * How long a claim's pg-boss attempt may go unchecked by the extensions of the instance that holds it. The
 * thread's row is the claim: pg-boss's attempt ends only in the transactions that end the row's claim, or by
 * pg-boss's monitor after a day (`longestJobSeconds`), which a check this often notices in time.
 */
const attemptCheckMs = 10_000;

/**
 * Settling claims: each is one transaction that checks the claim on the thread's row (same token, lock not run
 * out), ends or extends it there and settles the pg-boss attempt with its fence (`touch`, `complete`, `fail`,
 * `cancel`). `claim-lost` when either says the claim is gone; nothing changes then. An extension whose attempt
 * this instance saw active less than `attemptCheckMs` ago (it claimed or touched it) is one statement on the row.
 */
export class PostgresSettlement {
  readonly #context: DispatchContext;
  /** When this instance last saw each held claim's attempt active (claimed or touched), by claim token. */
  readonly #attemptSeen = new Map<string, number>();

  constructor(context: DispatchContext) {
    this.#context = context;
  }

  /** The claim was just taken here: its pg-boss attempt is active. */
  claimed(claim: DispatchClaim, at: number): void {
    this.#attemptSeen.set(claim.token, at);
  }

  /** The claim is settled or lost: forgotten here. */
  released(claim: DispatchClaim): void {
    this.#attemptSeen.delete(claim.token);
  }

  async extend(claim: DispatchClaim, lockMs: number | undefined): Promise<void> {
    const { s, jobs, pool, clock } = this.#context;
    const extension = `UPDATE ${s}.dispatch_threads SET lock_expires_at = now.ms + coalesce($3, lock_ms)
       FROM (SELECT ${serverNowMs} AS ms) now WHERE ${heldClaim(s)}`;
    const values = [claim.threadId, claim.token, lockMs ?? null];
    const seen = this.#attemptSeen.get(claim.token);
    const started = clock.monotonic();
    try {
      if (seen !== undefined && started - seen < attemptCheckMs) {
        if ((await pool.query(extension, values)).rowCount !== 1) throw claimLostError(claim);
        return;
      }
      await inTransaction(pool, async (transaction) => {
        if ((await transaction.query(extension, values)).rowCount !== 1) throw claimLostError(claim);
        if (!(await jobs.touch(transaction, jobAttemptOf(claim.token)))) throw claimLostError(claim);
      });
      this.#attemptSeen.set(claim.token, started);
    } catch (error) {
      if (LunationError.hasCode(error, 'claim-lost')) this.released(claim);
      throw error;
    }
  }

  complete(claim: DispatchClaim): Promise<CompleteResult> {
    const { s, jobs, channels } = this.#context;
    return inTransaction(this.#context.pool, async (transaction) => {
      const { rows } = await transaction.query(
        `WITH released AS (
           UPDATE ${s}.dispatch_threads SET ${clearClaim}, failures = 0, lost_claims = 0
           FROM (SELECT ${serverNowMs} AS ms) now WHERE ${heldClaim(s)}
           RETURNING resource_id
         ), counted AS (${countOne(s, 'completed')})
         SELECT resource_id FROM released`,
        [claim.threadId, claim.token],
      );
      await this.#settled(claim, rows.length, () => jobs.complete(transaction, jobAttemptOf(claim.token)));
      transaction.notify(channels.wake);
      // Read after the row lock: a submission that held it has committed, and its entry is seen here.
      if (!(await hasPending(transaction, s, claim.threadId))) return { rewoken: false };
      await jobs.wake(transaction, claim.threadId, (rows[0].resource_id as string | null) ?? undefined);
      return { rewoken: true };
    });
  }

  fail(claim: DispatchClaim, error: unknown, options: FailOptions): Promise<FailResult> {
    const { s, jobs, policy, channels } = this.#context;
    const info = toErrorInfo(error);
    const retryable = options.retryable ?? (LunationError.isInstance(error) && error.isRetryable);
    return inTransaction(this.#context.pool, async (transaction) => {
      const { rows } = await transaction.query(
        `WITH released AS (
           UPDATE ${s}.dispatch_threads SET ${clearClaim}, failures = failures + 1
           FROM (SELECT ${serverNowMs} AS ms) now WHERE ${heldClaim(s)}
           RETURNING failures, now.ms::float8 AS now
         ), counted AS (${countOne(s, 'failed')})
         SELECT failures, now FROM released`,
        [claim.threadId, claim.token],
      );
      const attempt = jobAttemptOf(claim.token);
      await this.#settled(claim, rows.length, () => jobs.fail(transaction, attempt, info));
      transaction.notify(channels.wake);
      const failures = rows[0].failures as number;
      const now = rows[0].now as number;
      if (retryable && failures < policy.maxAttempts) {
        const retryAt = now + dispatchRetryDelay(policy.backoff, failures);
        await jobs.retry(transaction, attempt.id, new Date(retryAt));
        return { deadLettered: false, retryAt };
      }
      await transaction.query(
        `UPDATE ${s}.dispatch_threads SET dead_at = $2, dead_attempts = $3, dead_error = $4::json, dead_job_id = $5
         WHERE thread_id = $1`,
        [claim.threadId, now, failures, JSON.stringify(info), attempt.id],
      );
      return { deadLettered: true };
    });
  }

  handBack(claim: DispatchClaim, delayMs: number): Promise<void> {
    const { s, jobs, channels } = this.#context;
    return inTransaction(this.#context.pool, async (transaction) => {
      const { rows } = await transaction.query(
        `UPDATE ${s}.dispatch_threads SET ${clearClaim}
         FROM (SELECT ${serverNowMs} AS ms) now WHERE ${heldClaim(s)}
         RETURNING now.ms::float8 AS now`,
        [claim.threadId, claim.token],
      );
      const startAfter =
        rows.length === 1 && delayMs > 0 ? new Date((rows[0].now as number) + delayMs) : undefined;
      await this.#settled(claim, rows.length, () =>
        jobs.putBack(transaction, jobAttemptOf(claim.token), startAfter),
      );
      transaction.notify(channels.wake);
    });
  }

  /** Throws `claim-lost` (rolling back) unless the row matched and pg-boss settled the attempt. */
  async #settled(claim: DispatchClaim, matched: number, settle: () => Promise<boolean>): Promise<void> {
    if (matched !== 1 || !(await settle())) throw claimLostError(claim);
  }
}
