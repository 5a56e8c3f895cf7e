import type {
  ClaimOptions,
  CompleteResult,
  DeadLetter,
  DeadLetterListOptions,
  DispatchClaim,
  DispatchDepth,
  Dispatcher,
  FailOptions,
  FailResult,
  HandBackOptions,
  InboxEntry,
  Submission,
  SubmitResult,
} from '../dispatch.js';
import type { CancelRequest, CancelRequestInput, CancelWatch } from '../dispatch-cancel.js';
import type {
  AppendEventsOptions,
  EndEventsOptions,
  ReadEventsOptions,
  RunEventPage,
  RunEventRecord,
  SubscribeEventsOptions,
} from '../dispatch-events.js';
import { LunationError } from '../errors.js';
import type { AgentEvent } from '../events.js';
import { specificationVersions } from '../specification.js';
import { assertId, assertInteger, assertObject } from '../store-utils/store-input.js';
import { assertSubmission, parseRunEventId } from './dispatch-input.js';
import { assertAppendEvents, assertFence } from './run-event-fence.js';

/** `claim` options as a {@link DispatchBackend} receives them: checked, `waitMs` resolved. */
export interface CheckedClaimOptions extends ClaimOptions {
  waitMs: number;
}

/**
 * What a dispatcher implements beneath {@link CheckedDispatcher}: the contract's operations, each atomic,
 * called only while the dispatcher is open and only with checked arguments, defaults resolved (a missing
 * `lockMs` stays the backend's to choose). A backend raises the contract's errors for its own rules
 * (`claim-lost`, `overloaded`, `stale-lease`).
 */
export interface DispatchBackend {
  /** A short name for diagnostics, e.g. `bullmq`. */
  readonly kind: string;
  /** See `SubmissionQueue.submit`. */
  submit(submission: Submission): Promise<SubmitResult>;
  /** See `WorkQueue.claim`; an aborted `signal` never gets here. */
  claim(options: CheckedClaimOptions): Promise<DispatchClaim | undefined>;
  /** See `WorkQueue.extend`; `lockMs` undefined when the caller gave none: the claim keeps the lock it was made with. */
  extend(claim: DispatchClaim, lockMs: number | undefined): Promise<void>;
  /** See `WorkQueue.pending`. */
  pending(threadId: string): Promise<InboxEntry[]>;
  /** See `WorkQueue.acknowledge`. */
  acknowledge(threadId: string, submissionIds: readonly string[]): Promise<number>;
  /** See `WorkQueue.complete`. */
  complete(claim: DispatchClaim): Promise<CompleteResult>;
  /** See `WorkQueue.fail`. */
  fail(claim: DispatchClaim, error: unknown, options: FailOptions): Promise<FailResult>;
  /** See `WorkQueue.handBack`. */
  handBack(claim: DispatchClaim, delayMs: number): Promise<void>;
  /** See `DispatchAdmin.depth`. */
  depth(): Promise<DispatchDepth>;
  /** See `DispatchAdmin.deadLetters`. */
  deadLetters(limit: number): Promise<DeadLetter[]>;
  /** See `DispatchAdmin.resubmit`. */
  resubmit(threadId: string): Promise<boolean>;
  /** See `CancelSignals.requestCancel`. */
  requestCancel(input: CancelRequestInput): Promise<CancelRequest>;
  /** See `CancelSignals.cancelRequests`. */
  cancelRequests(threadId: string): Promise<CancelRequest[]>;
  /** See `CancelSignals.watchCancel`. */
  watchCancel(threadId: string, listener: (request: CancelRequest) => void): Promise<CancelWatch>;
  /** See `CancelSignals.clearCancel`. */
  clearCancel(threadId: string, requestId: string | undefined): Promise<boolean>;
  /** See `RunEventLog.appendEvents`; `fence` checked (and every event's `seq` with it). */
  appendEvents(runId: string, events: readonly AgentEvent[], fence: number | undefined): Promise<string[]>;
  /** See `RunEventLog.readEvents`; `after` is the event id as a number. */
  readEvents(runId: string, after: number, limit: number): Promise<RunEventPage>;
  /**
   * See `RunEventLog.subscribeEvents`; `after` is the event id as a number. The backend maps the errors of the
   * iteration itself (they happen after this call returned).
   */
  subscribeEvents(runId: string, after: number, signal: AbortSignal): AsyncIterable<RunEventRecord>;
  /** See `RunEventLog.endEvents`. */
  endEvents(runId: string, ttlMs: number, fence: number | undefined): Promise<void>;
  /** The contract's error for anything else the backend threw during `operation` (never a LunationError). */
  toDispatchError(error: unknown, operation: string): LunationError;
  /** Stops the backend (see `Dispatcher.close`); called once, by the first `close()`. */
  close(): Promise<void>;
}

/** Dead letters per page when the caller gives no `limit`. */
const defaultDeadLetterLimit = 100;
/** Events per page when the caller gives no `limit`. */
const defaultReadLimit = 1_000;

/**
 * A `Dispatcher` over a {@link DispatchBackend}: it owns what every dispatcher does the same way, so a backend
 * implements only its operations. It checks each call's arguments (`invalid-argument`), refuses calls once
 * closed (`store-unavailable`, not retryable; `close()` runs the backend's once), maps the backend's other
 * errors through `toDispatchError`, and declares the dispatcher specification version. Extend it to add a
 * dispatcher's own methods.
 */
export class CheckedDispatcher implements Dispatcher {
  /** The dispatcher specification this contract defines. */
  readonly specificationVersion: Dispatcher['specificationVersion'] = specificationVersions.dispatcher;
  /** The backend's `kind`, e.g. `bullmq`. */
  readonly kind: string;
  readonly #backend: DispatchBackend;
  #closed = false;
  #closing: Promise<void> | undefined;

  /** Wraps `backend`, which is used only through this dispatcher from now on. */
  constructor(backend: DispatchBackend) {
    this.#backend = backend;
    this.kind = backend.kind;
  }

  async submit(submission: Submission): Promise<SubmitResult> {
    this.assertOpen();
    assertSubmission(submission);
    try {
      return await this.#backend.submit(submission);
    } catch (error) {
      throw this.toDispatchError(error, 'submit');
    }
  }

  async claim(options: ClaimOptions): Promise<DispatchClaim | undefined> {
    this.assertOpen();
    assertId(options?.workerId, 'workerId');
    if (options.lockMs !== undefined) assertInteger(options.lockMs, 'lockMs', 1);
    const waitMs = options.waitMs ?? 0;
    assertInteger(waitMs, 'waitMs', 0);
    if (options.signal?.aborted) return undefined;
    try {
      return await this.#backend.claim({ ...options, waitMs });
    } catch (error) {
      throw this.toDispatchError(error, 'claim');
    }
  }

  async extend(claim: DispatchClaim, lockMs?: number): Promise<void> {
    this.assertOpen();
    assertClaim(claim);
    if (lockMs !== undefined) assertInteger(lockMs, 'lockMs', 1);
    try {
      await this.#backend.extend(claim, lockMs);
    } catch (error) {
      throw this.toDispatchError(error, 'extend');
    }
  }

  async pending(threadId: string): Promise<InboxEntry[]> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      return await this.#backend.pending(threadId);
    } catch (error) {
      throw this.toDispatchError(error, 'pending');
    }
  }

  async acknowledge(threadId: string, submissionIds: readonly string[]): Promise<number> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    if (!Array.isArray(submissionIds)) throw invalid('submissionIds must be an array of submission ids');
    for (const id of submissionIds) assertId(id, 'submissionIds[]');
    try {
      return await this.#backend.acknowledge(threadId, submissionIds);
    } catch (error) {
      throw this.toDispatchError(error, 'acknowledge');
    }
  }

  async complete(claim: DispatchClaim): Promise<CompleteResult> {
    this.assertOpen();
    assertClaim(claim);
    try {
      return await this.#backend.complete(claim);
    } catch (error) {
      throw this.toDispatchError(error, 'complete');
    }
  }

  async fail(claim: DispatchClaim, error: unknown, options: FailOptions = {}): Promise<FailResult> {
    this.assertOpen();
    assertClaim(claim);
    if (options.retryable !== undefined && typeof options.retryable !== 'boolean') {
      throw invalid('retryable must be a boolean');
    }
    try {
      return await this.#backend.fail(claim, error, options);
    } catch (failure) {
      throw this.toDispatchError(failure, 'fail');
    }
  }

  async handBack(claim: DispatchClaim, options: HandBackOptions = {}): Promise<void> {
    this.assertOpen();
    assertClaim(claim);
    const delayMs = options.delayMs ?? 0;
    assertInteger(delayMs, 'delayMs', 0);
    try {
      await this.#backend.handBack(claim, delayMs);
    } catch (error) {
      throw this.toDispatchError(error, 'handBack');
    }
  }

  async depth(): Promise<DispatchDepth> {
    this.assertOpen();
    try {
      return await this.#backend.depth();
    } catch (error) {
      throw this.toDispatchError(error, 'depth');
    }
  }

  async deadLetters(options: DeadLetterListOptions = {}): Promise<DeadLetter[]> {
    this.assertOpen();
    const limit = options.limit ?? defaultDeadLetterLimit;
    assertInteger(limit, 'limit', 1);
    try {
      return await this.#backend.deadLetters(limit);
    } catch (error) {
      throw this.toDispatchError(error, 'deadLetters');
    }
  }

  async resubmit(threadId: string): Promise<boolean> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      return await this.#backend.resubmit(threadId);
    } catch (error) {
      throw this.toDispatchError(error, 'resubmit');
    }
  }

  async requestCancel(input: CancelRequestInput): Promise<CancelRequest> {
    this.assertOpen();
    assertId(input?.threadId, 'threadId');
    if (input.runId !== undefined) assertId(input.runId, 'runId');
    if (typeof input.reason !== 'string') throw invalid('reason must be a string');
    try {
      return await this.#backend.requestCancel(input);
    } catch (error) {
      throw this.toDispatchError(error, 'requestCancel');
    }
  }

  async cancelRequests(threadId: string): Promise<CancelRequest[]> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      return await this.#backend.cancelRequests(threadId);
    } catch (error) {
      throw this.toDispatchError(error, 'cancelRequests');
    }
  }

  async watchCancel(threadId: string, listener: (request: CancelRequest) => void): Promise<CancelWatch> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    if (typeof listener !== 'function') throw invalid('listener must be a function');
    try {
      return await this.#backend.watchCancel(threadId, listener);
    } catch (error) {
      throw this.toDispatchError(error, 'watchCancel');
    }
  }

  async clearCancel(threadId: string, requestId?: string): Promise<boolean> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    if (requestId !== undefined) assertId(requestId, 'requestId');
    try {
      return await this.#backend.clearCancel(threadId, requestId);
    } catch (error) {
      throw this.toDispatchError(error, 'clearCancel');
    }
  }

  async appendEvents(
    runId: string,
    events: readonly AgentEvent[],
    options?: AppendEventsOptions,
  ): Promise<string[]> {
    this.assertOpen();
    assertId(runId, 'runId');
    const fence = assertAppendEvents(events, options);
    try {
      return await this.#backend.appendEvents(runId, events, fence);
    } catch (error) {
      throw this.toDispatchError(error, 'appendEvents');
    }
  }

  async readEvents(runId: string, options: ReadEventsOptions = {}): Promise<RunEventPage> {
    this.assertOpen();
    assertId(runId, 'runId');
    const after = options.after === undefined ? 0 : parseRunEventId(options.after, 'after');
    const limit = options.limit ?? defaultReadLimit;
    assertInteger(limit, 'limit', 1);
    try {
      return await this.#backend.readEvents(runId, after, limit);
    } catch (error) {
      throw this.toDispatchError(error, 'readEvents');
    }
  }

  subscribeEvents(runId: string, options: SubscribeEventsOptions): AsyncIterable<RunEventRecord> {
    this.assertOpen();
    assertId(runId, 'runId');
    const after = options?.after === undefined ? 0 : parseRunEventId(options.after, 'after');
    if (typeof options?.signal?.aborted !== 'boolean') {
      throw invalid('subscribeEvents needs a signal (an AbortSignal) to end it');
    }
    return this.#backend.subscribeEvents(runId, after, options.signal);
  }

  async endEvents(runId: string, options: EndEventsOptions): Promise<void> {
    this.assertOpen();
    assertId(runId, 'runId');
    assertInteger(options?.ttlMs, 'ttlMs', 0);
    const fence = assertFence(options.fence);
    try {
      await this.#backend.endEvents(runId, options.ttlMs, fence);
    } catch (error) {
      throw this.toDispatchError(error, 'endEvents');
    }
  }

  /** Stops the backend once (see `Dispatcher.close`); later calls (and closes) find the dispatcher closed. */
  close(): Promise<void> {
    this.#closed = true;
    this.#closing ??= this.#backend.close();
    return this.#closing;
  }

  /** True once `close()` was called. */
  protected get isClosed(): boolean {
    return this.#closed;
  }

  /** Throws `store-unavailable` (not retryable) once closed; for a subclass's own methods. */
  protected assertOpen(): void {
    if (this.#closed) {
      throw new LunationError(
        'store-unavailable',
        `This ${this.kind} dispatcher is closed; create a new one`,
        { retryable: false },
      );
    }
  }

  /** The error a call raises for `error`: a LunationError as it is, anything else the backend's mapping. */
  protected toDispatchError(error: unknown, operation: string): LunationError {
    if (LunationError.isInstance(error)) return error;
    return this.#backend.toDispatchError(error, operation);
  }
}

function invalid(message: string): LunationError {
  return new LunationError('invalid-argument', message);
}

/** Checks a claim handed back to the dispatcher: an object with a thread id and a token. */
function assertClaim(claim: DispatchClaim): void {
  assertObject(claim as unknown, 'claim');
  assertId(claim.threadId, 'claim.threadId');
  assertId(claim.token, 'claim.token');
}
