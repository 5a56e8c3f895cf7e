import type { JobAttempt } from './thread-jobs.js';

/** A claim's token is pg-boss's attempt fence for the fetched job: `<job id>:<retry count>`. */
export function claimToken(attempt: JobAttempt): string {
  return `${attempt.id}:${attempt.retryCount}`;
}

/** The job attempt a token (read back from the thread's row, so never forged) names. */
export function jobAttemptOf(token: string): JobAttempt {
  const separator = token.lastIndexOf(':');
  return { id: token.slice(0, separator), retryCount: Number(token.slice(separator + 1)) };
}

/** SQL that ends a thread's claim: every claim column back to NULL. */
export const clearClaim = `claim_token = NULL, worker_id = NULL, claimed_at = NULL, lock_ms = NULL,
  lock_expires_at = NULL`;
