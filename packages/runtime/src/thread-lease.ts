import {
  type Clock,
  type ClockTimer,
  type IdSource,
  type Instrumentation,
  type Lease,
  LunationError,
  type RunInstrumentation,
} from '@lunation/contract';
import type { Persistence } from './persistence.js';

/** How {@link ThreadLeases} holds its leases. */
export interface ThreadLeaseSettings {
  /** The leases' time to live; renewed every third of it. */
  ttlMs: number;
  /** Told of rejected acquisitions (and, per run, of renewals and losses). */
  instrumentation?: Instrumentation | undefined;
}

/** A lease held by a live run: its fencing token, and the run to abort if a renewal fails or is late. */
interface HeldLease {
  token: number;
  /**
   * When (this process's monotonic clock, ms) the last acquisition or renewal that the store confirmed was sent:
   * the store's expiry is at least `ttlMs` after it, whatever happened to the answer on its way back.
   */
  confirmedAt: number;
  /** Set once the run is launched (between acquisition and launch the thread is being loaded). */
  run: AbortController | undefined;
  /** The run's observer, told of renewals and a loss. */
  instrumentation: RunInstrumentation | undefined;
}

/** Checks, on this process's own clock, that a run still provably holds its thread. */
export interface LeaseCheck {
  /**
   * True while the lease `token` of `threadId` is held here and was confirmed by the store recently enough that
   * no other process can have taken the thread: within `ttlMs` less a safety margin of a quarter of it.
   */
  fresh(threadId: string, token: number): boolean;
}

/**
 * The leases of one runtime's runs on their threads, across processes: the store's lease with its fencing token,
 * renewed while the run lives, released when it ends.
 *
 * Every lease carries this runtime instance's `incarnation`, a random id no other live process has, beside its
 * `owner` name (which replicas may share, and a restart keeps). The store lets a lease of the same owner and
 * another incarnation be taken over only once it went unrenewed for three quarters of its time to live (store
 * specification v2): never while a live process with the same owner renews it every third of that time, and
 * only once its holder no longer counts it fresh (below), so a replica stalled past it starts nothing more.
 *
 * One ticker renews every held lease each third of the time to live (rather than a timer per run), so no lease
 * goes longer than that without a renewal; a failed renewal aborts its run with `lease-lost`. The ticker stops
 * on the first tick that finds no lease held.
 *
 * Slow is not dead: a process stalled (GC, a starved CPU, SIGSTOP) past its lease may go on as if nothing
 * happened while another process already took the thread over. So a lease counts as held only while it is
 * provably fresh on this process's own monotonic clock — confirmed by the store less than three quarters of its
 * time to live ago ({@link fresh}). The loop asks before it starts a tool or a model call, and the ticker stops a run
 * whose lease went unconfirmed that long (`lease-lost`) even when the store has not refused anything yet.
 */
export class ThreadLeases implements LeaseCheck {
  /** This runtime instance in leases: unique among live processes whatever owner they were given. */
  readonly incarnation: string;
  private readonly held = new Map<string, HeldLease>();
  private ticker: ClockTimer | undefined;
  private readonly clock: Clock;
  private readonly ttlMs: number;
  private readonly instrumentation: Instrumentation | undefined;

  /** Leases held under `owner`, on the `clock` (renewals, freshness) and with an incarnation id from `ids`. */
  constructor(
    private readonly persistence: Persistence,
    private readonly owner: string,
    { clock, ids }: { clock: Clock; ids: IdSource },
    settings: ThreadLeaseSettings,
  ) {
    this.clock = clock;
    this.incarnation = ids.id();
    this.ttlMs = settings.ttlMs;
    this.instrumentation = settings.instrumentation;
  }

  /**
   * Takes the thread for `runId` (a lease this instance left behind is taken at once, one of its owner's
   * previous life once it stopped renewing); `thread-busy` saying when to retry while a live process holds it.
   */
  acquire(threadId: string, runId: string): Promise<number | undefined> {
    const { persistence, owner, incarnation, ttlMs } = this;
    const sentAt = this.clock.monotonic();
    return persistence.acquireLease({ threadId, runId, owner, incarnation, ttlMs }).then(
      (lease) => {
        if (lease === undefined) return undefined;
        this.held.set(threadId, {
          token: lease.token,
          confirmedAt: sentAt,
          run: undefined,
          instrumentation: undefined,
        });
        return lease.token;
      },
      (error: unknown) => this.busy(threadId, runId, error),
    );
  }

  fresh(threadId: string, token: number): boolean {
    const lease = this.held.get(threadId);
    return lease?.token === token && this.clock.monotonic() - lease.confirmedAt < this.freshForMs;
  }

  /**
   * True once the lease `token` of `threadId` is provably still this process's: fresh already, or renewed now —
   * a renewal the store accepts means no later token was issued, so nothing read under this one went stale.
   * False when the store refuses the renewal (another process took the thread) or it came back too late.
   */
  async confirm(threadId: string, token: number): Promise<boolean> {
    if (this.fresh(threadId, token)) return true;
    if (this.held.get(threadId)?.token !== token) return false;
    return (await this.renew(threadId)) && this.fresh(threadId, token);
  }

  /** How long after its confirmation a lease counts as held: its time to live less a quarter of it. */
  private get freshForMs(): number {
    return this.ttlMs * 0.75;
  }

  /** Rethrows `error`; a `thread-busy` one says who holds the thread and when to retry, without a takeover. */
  private async busy(threadId: string, runId: string, error: unknown): Promise<never> {
    if (!LunationError.hasCode(error, 'thread-busy')) throw error;
    const held = heldLease(error.details) ?? (await this.persistence.getLease(threadId));
    const now = this.clock.now();
    const busy =
      held === undefined
        ? error // freed a moment ago: still busy as far as this caller knows
        : held.owner === this.owner
          ? busyWithOwnOwner(threadId, held, now)
          : busyElsewhere(threadId, held, now);
    try {
      this.instrumentation?.leaseRejected?.({ threadId, runId, error: busy });
    } catch {
      // instrumentation must not change what the caller gets
    }
    throw busy;
  }

  /** Renews the lease while the run lives; a failed or late renewal aborts `run` with `lease-lost`. */
  keep(
    threadId: string,
    token: number,
    run: AbortController,
    instrumentation?: RunInstrumentation | undefined,
  ): void {
    const held = this.held.get(threadId);
    if (held?.token === token) {
      held.run = run;
      held.instrumentation = instrumentation;
    } else {
      // Not acquired through this instance (or taken again since): fresh only once a renewal confirms it.
      this.held.set(threadId, { token, confirmedAt: Number.NEGATIVE_INFINITY, run, instrumentation });
    }
    if (held?.token !== token) void this.renew(threadId);
    if (this.ticker !== undefined) return;
    this.ticker = this.clock.setInterval(() => this.renewAll(), Math.max(50, Math.floor(this.ttlMs / 3)));
    this.ticker.unref();
  }

  /** Stops renewing the lease and releases it (a failure to release only leaves it to expire). */
  release(threadId: string, token: number): Promise<void> {
    if (this.held.get(threadId)?.token === token) this.held.delete(threadId);
    return this.persistence.releaseLease(threadId, token).then(nothing, nothing);
  }

  private renewAll(): void {
    if (this.held.size === 0) {
      this.clock.clearInterval(this.ticker);
      this.ticker = undefined;
      return;
    }
    const now = this.clock.monotonic();
    for (const [threadId, lease] of this.held) {
      if (lease.run !== undefined && now - lease.confirmedAt >= this.freshForMs) {
        // The process was too slow to renew in time (a stall): another process may hold the thread by now.
        const late = Math.round(now - lease.confirmedAt);
        this.lose(
          threadId,
          lease,
          leaseLost(
            threadId,
            `its last renewal was confirmed ${late} ms ago (time to live ${this.ttlMs} ms)`,
          ),
        );
        continue;
      }
      void this.renew(threadId);
    }
  }

  /** Renews the lease now; resolves whether the store confirmed it (a refusal loses it). */
  private renew(threadId: string): Promise<boolean> {
    const lease = this.held.get(threadId);
    if (lease === undefined) return Promise.resolve(false);
    const sentAt = this.clock.monotonic();
    const renewing = this.persistence.renewLease(threadId, lease.token, this.ttlMs);
    return renewing.then(
      () => {
        if (this.held.get(threadId) !== lease) return false;
        if (sentAt > lease.confirmedAt) lease.confirmedAt = sentAt;
        lease.instrumentation?.lease({ type: 'renew', threadId, token: lease.token });
        return true;
      },
      (error: unknown) => {
        // Only a lease still held counts as lost: one released meanwhile just ended with its run.
        if (this.held.get(threadId) !== lease) return false;
        this.lose(threadId, lease, leaseLost(threadId, 'the store refused its renewal', error));
        return false;
      },
    );
  }

  /** The lease is gone or may be: forget it and stop its run (its tools' signals abort). */
  private lose(threadId: string, lease: HeldLease, error: LunationError): void {
    this.held.delete(threadId);
    lease.instrumentation?.lease({ type: 'lost', threadId, token: lease.token, error });
    lease.run?.abort(error);
  }
}

function leaseLost(threadId: string, why: string, cause?: unknown): LunationError {
  return new LunationError(
    'lease-lost',
    `Lost the lease of thread "${threadId}": ${why}. The run stops here; the process that holds the thread now continues it from the store.`,
    cause === undefined ? { details: { threadId } } : { cause, details: { threadId } },
  );
}

function nothing(): void {}

/** The thread has an active run in this process. */
export function busyHere(threadId: string, runId: string): LunationError {
  return new LunationError(
    'thread-busy',
    `Thread "${threadId}" already has an active run (run ${runId}); wait for it or cancel it`,
    { details: { threadId, runId } },
  );
}

/** What a `thread-busy` error of the store says of the lease held: its holder and times. */
type LeaseHolder = Pick<Lease, 'runId' | 'owner' | 'renewedAt' | 'expiresAt'>;

function heldLease(details: Record<string, unknown> | undefined): LeaseHolder | undefined {
  const { runId, owner, renewedAt, expiresAt } = details ?? {};
  if (typeof runId !== 'string' || typeof owner !== 'string') return undefined;
  if (typeof renewedAt !== 'number' || typeof expiresAt !== 'number') return undefined;
  return { runId, owner, renewedAt, expiresAt };
}

/** The thread is held by another process: say whose it is and when it frees up if that process is gone. */
function busyElsewhere(threadId: string, held: LeaseHolder, now: number): LunationError {
  const { runId, owner, expiresAt } = held;
  const retryAfterMs = Math.max(0, expiresAt - now);
  return new LunationError(
    'thread-busy',
    `Thread "${threadId}" has an active run (run ${runId}) in another process (${owner}). If that process stopped, ` +
      `the thread is free when its lease expires in ${seconds(retryAfterMs)} s; retry then.`,
    { details: { threadId, runId, owner, expiresAt, retryAfterMs } },
  );
}

/**
 * The thread is held under this runtime's own owner name by another instance that still renews it: a live
 * duplicate (two replicas given one owner), or a previous life that stopped only moments ago.
 */
function busyWithOwnOwner(threadId: string, held: LeaseHolder, now: number): LunationError {
  const { runId, owner, renewedAt, expiresAt } = held;
  const takeOverAfterMs = Math.ceil(((expiresAt - renewedAt) * 3) / 4);
  const retryAfterMs = Math.max(0, renewedAt + takeOverAfterMs - now);
  return new LunationError(
    'thread-busy',
    `Thread "${threadId}" has an active run (run ${runId}) in another live process with this runtime's own ` +
      `owner "${owner}" (two replicas given one owner, or this one's previous life), which renewed its lease ` +
      `${Math.round(Math.max(0, now - renewedAt) / 1_000)} s ago. If that process stopped, this owner takes the ` +
      `thread over once the lease has gone ${seconds(takeOverAfterMs)} s without renewal, in ` +
      `${seconds(retryAfterMs)} s at most; retry then.`,
    { details: { threadId, runId, owner, expiresAt, retryAfterMs } },
  );
}

function seconds(ms: number): number {
  return Math.ceil(ms / 1_000);
}
