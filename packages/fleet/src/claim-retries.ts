import type { DispatchBackoff, DispatchClaim } from '@lunation/contract';

/** How many threads' back-offs a worker remembers at most (the oldest is forgotten first). */
const REMEMBERED_THREADS = 10_000;

/**
 * The back-off of claims that failed for a retryable reason (the store unavailable or timing out): such a failure
 * is the infrastructure's, not the submission's, so the claim is handed back (never counted toward the
 * dispatcher's `maxAttempts`) and offered again after a delay that grows with each consecutive such failure of the
 * thread on this worker — `initialMs * factor^(n - 1)`, at most `maxMs`, with jitter so that threads failing
 * together do not come back together — and so a store that stays down is not hot-looped. A claim that completes
 * (or finds the thread held elsewhere: the store answered) starts the thread's count again.
 */
export class ClaimRetries {
  private readonly failures = new Map<string, number>();
  private readonly initialMs: number;
  private readonly factor: number;
  private readonly maxMs: number;

  constructor(backoff: DispatchBackoff = {}) {
    this.initialMs = backoff.initialMs ?? 500;
    this.factor = backoff.factor ?? 2;
    this.maxMs = backoff.maxMs ?? 30_000;
  }

  /** Counts one more retryable failure of the claim's thread and answers how long to hold the thread back. */
  delayAfterFailure(claim: DispatchClaim, retryAfterMs?: number): number {
    const failures = (this.failures.get(claim.threadId) ?? 0) + 1;
    this.failures.delete(claim.threadId);
    this.failures.set(claim.threadId, failures);
    if (this.failures.size > REMEMBERED_THREADS) {
      const oldest = this.failures.keys().next().value;
      if (oldest !== undefined) this.failures.delete(oldest);
    }
    const ceiling = Math.min(this.maxMs, this.initialMs * this.factor ** (failures - 1));
    // Equal jitter: half the delay fixed, half spread by the claim's token (no random source needed: a simulation
    // replays it, and every claim of a thread has a token of its own).
    const delay = Math.round(ceiling / 2 + (ceiling / 2) * spread(claim.token));
    return Math.max(delay, retryAfterMs ?? 0);
  }

  /** The thread's work went through: its next failure starts the back-off from the beginning. */
  succeeded(threadId: string): void {
    this.failures.delete(threadId);
  }
}

/** A number in [0, 1) from the text (FNV-1a). */
function spread(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash / 0x1_0000_0000;
}
