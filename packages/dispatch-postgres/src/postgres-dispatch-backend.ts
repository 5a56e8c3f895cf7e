import {
  type AgentEvent,
  type CancelRequest,
  type CancelRequestInput,
  type CancelWatch,
  type ClockTimer,
  type CompleteResult,
  type DeadLetter,
  type DispatchClaim,
  type DispatchDepth,
  type FailOptions,
  type FailResult,
  type InboxEntry,
  LunationError,
  type RunEventPage,
  type RunEventRecord,
  type Submission,
  type SubmitResult,
} from '@lunation/contract';
import type { CheckedClaimOptions, DispatchBackend } from '@lunation/contract/dispatch-utils';
import type pg from 'pg';
import type { DispatchContext } from './dispatch-context.js';
import { migrate } from './dispatch-migrations.js';
import { PostgresAdmin } from './postgres-admin.js';
import { PostgresCancels } from './postgres-cancels.js';
import { PostgresClaims } from './postgres-claims.js';
import type { PostgresDispatcherPool } from './postgres-connection.js';
import { openContext, type PostgresDispatcherOptions } from './postgres-dispatcher-options.js';
import { PostgresInbox } from './postgres-inbox.js';
import { maintain } from './postgres-maintenance.js';
import { PostgresRunEvents } from './postgres-run-events.js';
import { PostgresSettlement } from './postgres-settlement.js';
import { toDispatchError } from './to-dispatch-error.js';

/** How long `close()` waits for calls in flight before it ends the pool anyway. */
const closeGraceMs = 5_000;

/**
 * The operations of `PostgresDispatcher` (pg-boss jobs and the dispatcher's own tables; see its TSDoc), each run
 * once the schema is migrated and counted in flight until it settles; `CheckedDispatcher` checks their
 * arguments and the closed state first.
 */
export class PostgresDispatchBackend implements DispatchBackend {
  readonly kind = 'postgres';
  /** The PostgreSQL schema of the dispatcher's (and pg-boss's) tables. */
  readonly schema: string;
  readonly #pool: PostgresDispatcherPool;
  readonly #ownedPool: pg.Pool | undefined;
  readonly #context: DispatchContext;
  readonly #inbox: PostgresInbox;
  readonly #claims: PostgresClaims;
  readonly #settlement: PostgresSettlement;
  readonly #admin: PostgresAdmin;
  readonly #cancels: PostgresCancels;
  readonly #events: PostgresRunEvents;
  readonly #closing = new AbortController();
  /** Claims this instance holds, handed back by `close()`. */
  readonly #held = new Map<string, DispatchClaim>();
  readonly #inFlight = new Set<Promise<unknown>>();
  #initializing: Promise<void> | undefined;
  #initialized = false;
  #maintenanceTimer: ClockTimer | undefined;
  #lastPoolError: unknown;
  #closed = false;
  #dropSchema = false;

  constructor(options: PostgresDispatcherOptions) {
    const opened = openContext(options, (error) => {
      this.#lastPoolError = error;
    });
    this.schema = opened.context.schema;
    this.#context = opened.context;
    this.#pool = opened.context.pool;
    this.#ownedPool = opened.ownedPool;
    this.#inbox = new PostgresInbox(this.#context);
    this.#claims = new PostgresClaims(this.#context);
    this.#settlement = new PostgresSettlement(this.#context);
    this.#admin = new PostgresAdmin(this.#context);
    this.#cancels = new PostgresCancels(this.#context);
    this.#events = new PostgresRunEvents(this.#context);
  }

  /** Migrates the schema, starts pg-boss and this instance's maintenance (see `PostgresDispatcher.init`). */
  init(): Promise<void> {
    return this.#track(async () => undefined);
  }

  submit(submission: Submission): Promise<SubmitResult> {
    return this.#track(() => this.#inbox.submit(submission));
  }

  claim(options: CheckedClaimOptions): Promise<DispatchClaim | undefined> {
    return this.#track(async () => {
      const lockMs = options.lockMs ?? this.#context.settings.lockMs;
      const signal = options.signal
        ? AbortSignal.any([options.signal, this.#closing.signal])
        : this.#closing.signal;
      if (signal.aborted) return undefined;
      const claim = await this.#claims.claim(options.workerId, lockMs, options.waitMs, signal);
      if (claim === undefined) return undefined;
      this.#settlement.claimed(claim, this.#context.clock.monotonic());
      if (signal.aborted) {
        await this.#settlement.handBack(claim, 0).catch(this.#context.reportError);
        return undefined;
      }
      this.#held.set(claim.token, claim);
      return claim;
    });
  }

  extend(claim: DispatchClaim, lockMs: number | undefined): Promise<void> {
    return this.#track(() => this.#settlement.extend(claim, lockMs));
  }

  pending(threadId: string): Promise<InboxEntry[]> {
    return this.#track(() => this.#inbox.pending(threadId));
  }

  acknowledge(threadId: string, submissionIds: readonly string[]): Promise<number> {
    return this.#track(() => this.#inbox.acknowledge(threadId, submissionIds));
  }

  complete(claim: DispatchClaim): Promise<CompleteResult> {
    return this.#track(() => this.#releasing(claim, () => this.#settlement.complete(claim)));
  }

  fail(claim: DispatchClaim, error: unknown, options: FailOptions): Promise<FailResult> {
    return this.#track(() => this.#releasing(claim, () => this.#settlement.fail(claim, error, options)));
  }

  handBack(claim: DispatchClaim, delayMs: number): Promise<void> {
    return this.#track(() => this.#releasing(claim, () => this.#settlement.handBack(claim, delayMs)));
  }

  depth(): Promise<DispatchDepth> {
    return this.#track(async () => {
      await this.#claims.sweep();
      return this.#admin.depth();
    });
  }

  deadLetters(limit: number): Promise<DeadLetter[]> {
    return this.#track(() => this.#admin.deadLetters(limit));
  }

  resubmit(threadId: string): Promise<boolean> {
    return this.#track(() => this.#admin.resubmit(threadId));
  }

  requestCancel(input: CancelRequestInput): Promise<CancelRequest> {
    return this.#track(() => this.#cancels.request(input));
  }

  cancelRequests(threadId: string): Promise<CancelRequest[]> {
    return this.#track(() => this.#cancels.list(threadId));
  }

  watchCancel(threadId: string, listener: (request: CancelRequest) => void): Promise<CancelWatch> {
    return this.#track(() => this.#cancels.watch(threadId, listener));
  }

  clearCancel(threadId: string, requestId: string | undefined): Promise<boolean> {
    return this.#track(() => this.#cancels.clear(threadId, requestId));
  }

  appendEvents(runId: string, events: readonly AgentEvent[], fence: number | undefined): Promise<string[]> {
    return this.#track(() => this.#events.append(runId, events, fence));
  }

  readEvents(runId: string, after: number, limit: number): Promise<RunEventPage> {
    return this.#track(() => this.#events.read(runId, after, limit));
  }

  subscribeEvents(runId: string, after: number, caller: AbortSignal): AsyncIterable<RunEventRecord> {
    const signal = AbortSignal.any([caller, this.#closing.signal]);
    const ready = () => this.#ready();
    const events = this.#events;
    const wrap = (error: unknown) => toDispatchError(error, 'subscribeEvents', this.#lastPoolError);
    return {
      async *[Symbol.asyncIterator]() {
        try {
          await ready();
          yield* events.subscribe(runId, after, signal);
        } catch (error) {
          if (signal.aborted) return;
          throw wrap(error);
        }
      },
    };
  }

  endEvents(runId: string, ttlMs: number, fence: number | undefined): Promise<void> {
    return this.#track(() => this.#events.end(runId, ttlMs, fence));
  }

  toDispatchError(error: unknown, operation: string): LunationError {
    return toDispatchError(error, operation, this.#lastPoolError);
  }

  /**
   * Stops this instance: waiting claims resolve `undefined`, subscriptions and cancel watches end, claims it holds
   * are handed back, pg-boss stops, the schema is dropped when `dropSchemaOnClose()` asked, and a pool it opened
   * is ended (an injected pool stays open).
   */
  close(): Promise<void> {
    this.#closed = true;
    return this.#shutdown();
  }

  /** Makes `close()` drop the schema with everything in it before it ends the pool. */
  dropSchemaOnClose(): void {
    this.#dropSchema = true;
  }

  async #ready(): Promise<void> {
    this.#initializing ??= this.#initialize().catch((error: unknown) => {
      this.#initializing = undefined;
      throw error;
    });
    await this.#initializing;
  }

  async #initialize(): Promise<void> {
    const client = await this.#pool.connect();
    let failure: unknown;
    try {
      await migrate(client, this.schema, () => this.#context.jobs.start());
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      client.release(failure instanceof Error && /Connection terminated|ECONNRESET/.test(failure.message));
    }
    // Closed meanwhile: what close() stopped before pg-boss started must not keep running.
    if (this.#closed) {
      await this.#context.jobs.stop();
      return;
    }
    this.#initialized = true;
    this.#maintenanceTimer = this.#context.clock.setInterval(() => {
      maintain(this.#context).catch(this.#context.reportError);
    }, this.#context.settings.maintenanceIntervalMs);
    this.#maintenanceTimer.unref();
  }

  /** Forgets a held claim once its release ran, or once it proved gone (`claim-lost`). */
  async #releasing<T>(claim: DispatchClaim, release: () => Promise<T>): Promise<T> {
    try {
      const result = await release();
      this.#held.delete(claim.token);
      this.#settlement.released(claim);
      return result;
    } catch (error) {
      if (LunationError.hasCode(error, 'claim-lost')) {
        this.#held.delete(claim.token);
        this.#settlement.released(claim);
      }
      throw error;
    }
  }

  async #shutdown(): Promise<void> {
    this.#closing.abort();
    this.#context.clock.clearInterval(this.#maintenanceTimer);
    await Promise.race([
      Promise.allSettled([...this.#inFlight]),
      new Promise((resolve) =>
        this.#context.clock.setTimeout(() => resolve(undefined), closeGraceMs).unref(),
      ),
    ]);
    if (this.#initialized) {
      for (const claim of [...this.#held.values()]) {
        await this.#settlement.handBack(claim, 0).catch(() => undefined);
      }
    }
    this.#held.clear();
    await this.#cancels.close().catch(() => undefined);
    this.#context.hub.close();
    await this.#context.jobs.stop().catch(this.#context.reportError);
    try {
      if (this.#dropSchema) await this.#pool.query(`DROP SCHEMA IF EXISTS ${this.#context.s} CASCADE`);
    } finally {
      await this.#ownedPool?.end().catch(() => undefined);
    }
  }

  /** Runs one operation once the schema is ready, counted in flight until it settles (`close()` waits for it). */
  #track<T>(run: () => Promise<T>): Promise<T> {
    const promise = this.#ready().then(run);
    this.#inFlight.add(promise);
    promise.finally(() => this.#inFlight.delete(promise)).catch(() => undefined);
    return promise;
  }
}
