import {
  type AgentEvent,
  type AppendEventsOptions,
  type CancelRequest,
  type CancelRequestInput,
  type CancelWatch,
  type ClaimOptions,
  type CompleteResult,
  type DeadLetter,
  type DeadLetterListOptions,
  type DispatchClaim,
  type DispatchDepth,
  type Dispatcher,
  type EndEventsOptions,
  type FailOptions,
  type FailResult,
  type HandBackOptions,
  type InboxEntry,
  LunationError,
  type ReadEventsOptions,
  type RunEventPage,
  type RunEventRecord,
  type Submission,
  type SubmitResult,
  type SubscribeEventsOptions,
} from '@lunation/contract';
import {
  assertAppendEvents,
  assertFence,
  assertId,
  assertInteger,
  assertSubmission,
  parseRunEventId,
} from '@lunation/contract/dispatch-utils';
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

const defaultReadLimit = 1_000;
/** How long `close()` waits for calls in flight before it ends the pool anyway. */
const closeGraceMs = 5_000;

/**
 * A `Dispatcher` on PostgreSQL: one pg-boss job per thread with work, claimed with pg-boss's fetch and settled
 * with its fenced complete, fail, cancel and touch; inboxes, claim locks, dead letters, cancel requests and run
 * event logs in tables beside pg-boss's, in one schema; LISTEN/NOTIFY wakes waiting claims, cancel watches and
 * event subscriptions across processes.
 *
 * @remarks The schema is migrated on first use; call `init()` (or use `PostgresDispatcher.open`) to do it up front.
 */
export class PostgresDispatcher implements Dispatcher {
  readonly specificationVersion = 'v2' as const;
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
  #maintenanceTimer: ReturnType<typeof setInterval> | undefined;
  #lastPoolError: unknown;
  #closed: Promise<void> | undefined;

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

  /** Opens a dispatcher and brings its schema (its own tables and pg-boss's) up to date. */
  static async open(options: PostgresDispatcherOptions): Promise<PostgresDispatcher> {
    const dispatcher = new PostgresDispatcher(options);
    try {
      await dispatcher.init();
    } catch (error) {
      await dispatcher.close().catch(() => {});
      throw error;
    }
    return dispatcher;
  }

  /**
   * Migrates the schema (once, under an advisory lock, however many processes start at once), starts pg-boss
   * and this instance's maintenance. Every call does it first when needed.
   */
  init(): Promise<void> {
    return this.#call('init', () => this.#ready());
  }

  submit(submission: Submission): Promise<SubmitResult> {
    return this.#call('submit', () => {
      assertSubmission(submission);
      return this.#inbox.submit(submission);
    });
  }

  claim(options: ClaimOptions): Promise<DispatchClaim | undefined> {
    return this.#call('claim', async () => {
      assertId(options?.workerId, 'workerId');
      const lockMs = options.lockMs ?? this.#context.settings.lockMs;
      assertInteger(lockMs, 'lockMs', 1);
      const waitMs = options.waitMs ?? 0;
      assertInteger(waitMs, 'waitMs', 0);
      const signal = options.signal
        ? AbortSignal.any([options.signal, this.#closing.signal])
        : this.#closing.signal;
      if (signal.aborted) return undefined;
      const claim = await this.#claims.claim(options.workerId, lockMs, waitMs, signal);
      if (claim === undefined) return undefined;
      if (signal.aborted) {
        await this.#settlement.handBack(claim, 0).catch(this.#context.reportError);
        return undefined;
      }
      this.#held.set(claim.token, claim);
      return claim;
    });
  }

  extend(claim: DispatchClaim, lockMs?: number): Promise<void> {
    return this.#call('extend', () => {
      assertClaim(claim);
      if (lockMs !== undefined) assertInteger(lockMs, 'lockMs', 1);
      return this.#settlement.extend(claim, lockMs);
    });
  }

  pending(threadId: string): Promise<InboxEntry[]> {
    return this.#call('pending', () => {
      assertId(threadId, 'threadId');
      return this.#inbox.pending(threadId);
    });
  }

  acknowledge(threadId: string, submissionIds: readonly string[]): Promise<number> {
    return this.#call('acknowledge', () => {
      assertId(threadId, 'threadId');
      if (!Array.isArray(submissionIds)) throw invalid('submissionIds must be an array of submission ids');
      for (const id of submissionIds) assertId(id, 'submissionIds[]');
      return this.#inbox.acknowledge(threadId, submissionIds);
    });
  }

  complete(claim: DispatchClaim): Promise<CompleteResult> {
    return this.#call('complete', () => {
      assertClaim(claim);
      return this.#releasing(claim, () => this.#settlement.complete(claim));
    });
  }

  fail(claim: DispatchClaim, error: unknown, options: FailOptions = {}): Promise<FailResult> {
    return this.#call('fail', () => {
      assertClaim(claim);
      if (options.retryable !== undefined && typeof options.retryable !== 'boolean') {
        throw invalid('retryable must be a boolean');
      }
      return this.#releasing(claim, () => this.#settlement.fail(claim, error, options));
    });
  }

  handBack(claim: DispatchClaim, options: HandBackOptions = {}): Promise<void> {
    return this.#call('handBack', () => {
      assertClaim(claim);
      const delayMs = options.delayMs ?? 0;
      assertInteger(delayMs, 'delayMs', 0);
      return this.#releasing(claim, () => this.#settlement.handBack(claim, delayMs));
    });
  }

  depth(): Promise<DispatchDepth> {
    return this.#call('depth', async () => {
      await this.#claims.sweep();
      return this.#admin.depth();
    });
  }

  deadLetters(options: DeadLetterListOptions = {}): Promise<DeadLetter[]> {
    return this.#call('deadLetters', () => {
      const limit = options.limit ?? 100;
      assertInteger(limit, 'limit', 1);
      return this.#admin.deadLetters(limit);
    });
  }

  resubmit(threadId: string): Promise<boolean> {
    return this.#call('resubmit', () => {
      assertId(threadId, 'threadId');
      return this.#admin.resubmit(threadId);
    });
  }

  requestCancel(input: CancelRequestInput): Promise<CancelRequest> {
    return this.#call('requestCancel', () => {
      assertId(input?.threadId, 'threadId');
      if (input.runId !== undefined) assertId(input.runId, 'runId');
      if (typeof input.reason !== 'string') throw invalid('reason must be a string');
      return this.#cancels.request(input);
    });
  }

  cancelRequest(threadId: string): Promise<CancelRequest | undefined> {
    return this.#call('cancelRequest', () => {
      assertId(threadId, 'threadId');
      return this.#cancels.get(threadId);
    });
  }

  watchCancel(threadId: string, listener: (request: CancelRequest) => void): Promise<CancelWatch> {
    return this.#call('watchCancel', () => {
      assertId(threadId, 'threadId');
      if (typeof listener !== 'function') throw invalid('listener must be a function');
      return this.#cancels.watch(threadId, listener);
    });
  }

  clearCancel(threadId: string, requestId?: string): Promise<boolean> {
    return this.#call('clearCancel', () => {
      assertId(threadId, 'threadId');
      if (requestId !== undefined) assertId(requestId, 'requestId');
      return this.#cancels.clear(threadId, requestId);
    });
  }

  appendEvents(
    runId: string,
    events: readonly AgentEvent[],
    options?: AppendEventsOptions,
  ): Promise<string[]> {
    return this.#call('appendEvents', () => {
      assertId(runId, 'runId');
      const fence = assertAppendEvents(events, options);
      return this.#events.append(runId, events, fence);
    });
  }

  readEvents(runId: string, options: ReadEventsOptions = {}): Promise<RunEventPage> {
    return this.#call('readEvents', () => {
      assertId(runId, 'runId');
      const after = options.after === undefined ? 0 : parseRunEventId(options.after, 'after');
      const limit = options.limit ?? defaultReadLimit;
      assertInteger(limit, 'limit', 1);
      return this.#events.read(runId, after, limit);
    });
  }

  subscribeEvents(runId: string, options: SubscribeEventsOptions): AsyncIterable<RunEventRecord> {
    this.#assertOpen();
    assertId(runId, 'runId');
    const after = options?.after === undefined ? 0 : parseRunEventId(options.after, 'after');
    if (typeof options?.signal?.aborted !== 'boolean') {
      throw invalid('subscribeEvents needs a signal (an AbortSignal) to end it');
    }
    const signal = AbortSignal.any([options.signal, this.#closing.signal]);
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

  endEvents(runId: string, options: EndEventsOptions): Promise<void> {
    return this.#call('endEvents', () => {
      assertId(runId, 'runId');
      assertInteger(options?.ttlMs, 'ttlMs', 0);
      return this.#events.end(runId, options.ttlMs, assertFence(options.fence));
    });
  }

  /**
   * Stops this instance: waiting claims resolve `undefined`, subscriptions and cancel watches end, claims it holds
   * are handed back, pg-boss stops, and a pool it opened is ended (an injected pool stays open).
   */
  close(): Promise<void> {
    this.#closed ??= this.#shutdown();
    return this.#closed;
  }

  /** Drops the schema with everything in it (the dispatcher's tables and pg-boss's), then closes. */
  async dropSchema(): Promise<void> {
    this.#assertOpen();
    this.#closed = this.#shutdown(async () => {
      await this.#pool.query(`DROP SCHEMA IF EXISTS ${this.#context.s} CASCADE`);
    });
    await this.#closed;
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
    if (this.#closed !== undefined) {
      await this.#context.jobs.stop();
      return;
    }
    this.#initialized = true;
    this.#maintenanceTimer = setInterval(() => {
      maintain(this.#context).catch(this.#context.reportError);
    }, this.#context.settings.maintenanceIntervalMs);
    this.#maintenanceTimer.unref();
  }

  /** Forgets a held claim once its release ran, or once it proved gone (`claim-lost`). */
  async #releasing<T>(claim: DispatchClaim, release: () => Promise<T>): Promise<T> {
    try {
      const result = await release();
      this.#held.delete(claim.token);
      return result;
    } catch (error) {
      if (LunationError.hasCode(error, 'claim-lost')) this.#held.delete(claim.token);
      throw error;
    }
  }

  async #shutdown(beforeEnd?: () => Promise<void>): Promise<void> {
    this.#closing.abort();
    clearInterval(this.#maintenanceTimer);
    await Promise.race([
      Promise.allSettled([...this.#inFlight]),
      new Promise((resolve) => setTimeout(resolve, closeGraceMs).unref()),
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
      await beforeEnd?.();
    } finally {
      await this.#ownedPool?.end().catch(() => undefined);
    }
  }

  /** Runs one operation once the schema is ready: closed dispatchers refuse, and pg errors become LunationErrors. */
  #call<T>(operation: string, run: () => T | Promise<T>): Promise<T> {
    const promise = (async () => {
      this.#assertOpen();
      try {
        if (operation !== 'init') await this.#ready();
        return await run();
      } catch (error) {
        throw toDispatchError(error, operation, this.#lastPoolError);
      }
    })();
    this.#inFlight.add(promise);
    promise.finally(() => this.#inFlight.delete(promise)).catch(() => undefined);
    return promise;
  }

  #assertOpen(): void {
    if (this.#closed !== undefined) {
      throw new LunationError('store-unavailable', 'This PostgresDispatcher is closed; create a new one', {
        retryable: false,
      });
    }
  }
}

function invalid(message: string): LunationError {
  return new LunationError('invalid-argument', message);
}

function assertClaim(claim: DispatchClaim): void {
  if (typeof claim !== 'object' || claim === null) throw invalid('claim must be a claim returned by claim()');
  assertId(claim.threadId, 'claim.threadId');
  assertId(claim.token, 'claim.token');
}
