import { LunationError } from '../errors.js';
import { specificationVersions } from '../specification.js';
import type {
  AcquireLeaseInput,
  BeginToolExecutionInput,
  CheckpointCommit,
  CheckpointResult,
  CompleteToolExecutionInput,
  CreateThreadInput,
  Lease,
  ListMessagesOptions,
  ListRunsOptions,
  ListThreadsOptions,
  LunationStore,
  MessageRecord,
  Page,
  ReleaseLeaseInput,
  RenewLeaseInput,
  RunRecord,
  ThreadCheckpoint,
  ThreadRecord,
  ToolExecution,
} from '../store.js';
import {
  assertBeginToolExecution,
  assertCheckpointCommit,
  assertId,
  assertInteger,
  assertObject,
  pageLimit,
} from './store-input.js';

/** `listThreads` options as a {@link StoreBackend} receives them: the page size resolved and checked. */
export interface CheckedListThreadsOptions extends ListThreadsOptions {
  limit: number;
}

/** `listRuns` options as a {@link StoreBackend} receives them: the page size resolved and checked. */
export interface CheckedListRunsOptions extends ListRunsOptions {
  limit: number;
}

/** `listMessages` options as a {@link StoreBackend} receives them: `fromSeq` resolved, every bound checked. */
export interface CheckedListMessagesOptions extends ListMessagesOptions {
  fromSeq: number;
}

/**
 * The contract's store operations as a backend may implement them: each may answer synchronously (an in-memory
 * backend spares a promise per call) or with a promise.
 */
export type StoreOperations = {
  [Name in Exclude<
    keyof LunationStore,
    'specificationVersion' | 'kind' | 'close'
  >]: LunationStore[Name] extends (...args: infer Args) => Promise<infer Result>
    ? (...args: Args) => Result | Promise<Result>
    : never;
};

/**
 * What a store implements beneath {@link CheckedStore}: the contract's operations, each atomic, called only
 * while the store is open and only with input that passed the contract's checks (ids, counts, tokens, page
 * sizes, the shape of a commit). A backend still checks what only its data can tell (a cursor it issued, a
 * value it cannot store) and raises the contract's errors for its rules (conflicts, leases). An operation may
 * answer synchronously or with a promise, and may throw either way.
 */
export interface StoreBackend extends Omit<StoreOperations, 'listThreads' | 'listRuns' | 'listMessages'> {
  /** A short name for diagnostics, e.g. `sqlite`. */
  readonly kind: string;
  /** Threads in creation order (see `ThreadStore.listThreads`). */
  listThreads(options: CheckedListThreadsOptions): Page<ThreadRecord> | Promise<Page<ThreadRecord>>;
  /** Runs of a thread, oldest first (see `RunStore.listRuns`). */
  listRuns(threadId: string, options: CheckedListRunsOptions): Page<RunRecord> | Promise<Page<RunRecord>>;
  /** Committed messages in seq order (see `MessageStore.listMessages`). */
  listMessages(
    threadId: string,
    options: CheckedListMessagesOptions,
  ): MessageRecord[] | Promise<MessageRecord[]>;
  /** The contract's error for anything else the backend's driver threw (a LunationError never gets here). */
  toStoreError(error: unknown): LunationError;
  /** Releases what the backend opened (injected clients stay open); called once, by the first `close()`. */
  close(): Promise<void>;
}

/**
 * A `LunationStore` over a {@link StoreBackend}: it owns what every store does the same way, so a backend
 * implements only its atomic operations. It checks each call's arguments (`invalid-argument` before the
 * backend is touched), refuses calls once closed (`store-unavailable`, not retryable; `close()` runs the
 * backend's once), maps the backend's other errors through `toStoreError`, and declares the store
 * specification version. Extend it to add a store's own methods.
 */
export class CheckedStore implements LunationStore {
  /** The store specification this contract defines. */
  readonly specificationVersion: LunationStore['specificationVersion'] = specificationVersions.store;
  /** The backend's `kind`, e.g. `sqlite`. */
  readonly kind: string;
  readonly #backend: StoreBackend;
  #closed = false;
  #closing: Promise<void> | undefined;

  /** Wraps `backend`, which is used only through this store from now on. */
  constructor(backend: StoreBackend) {
    this.#backend = backend;
    this.kind = backend.kind;
  }

  async createThread(input: CreateThreadInput): Promise<ThreadRecord> {
    this.assertOpen();
    assertId(input.id, 'id');
    if (input.resourceId !== undefined) assertId(input.resourceId, 'resourceId');
    if (input.metadata !== undefined) assertObject(input.metadata, 'metadata');
    try {
      const result = this.#backend.createThread(input);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async getThread(threadId: string): Promise<ThreadRecord | undefined> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      const result = this.#backend.getThread(threadId);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async listThreads(options: ListThreadsOptions = {}): Promise<Page<ThreadRecord>> {
    this.assertOpen();
    const limit = pageLimit(options.limit);
    if (options.resourceId !== undefined) assertId(options.resourceId, 'resourceId');
    assertCursor(options.cursor);
    try {
      const result = this.#backend.listThreads({ ...options, limit });
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async updateThreadMetadata(threadId: string, metadata: Record<string, unknown>): Promise<ThreadRecord> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    assertObject(metadata, 'metadata');
    try {
      const result = this.#backend.updateThreadMetadata(threadId, metadata);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async deleteThread(threadId: string): Promise<boolean> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      const result = this.#backend.deleteThread(threadId);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async listMessages(threadId: string, options: ListMessagesOptions = {}): Promise<MessageRecord[]> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    const fromSeq = options.fromSeq ?? 1;
    assertInteger(fromSeq, 'fromSeq', 1);
    if (options.toSeq !== undefined) assertInteger(options.toSeq, 'toSeq', 0);
    if (options.limit !== undefined) assertInteger(options.limit, 'limit', 1);
    try {
      const result = this.#backend.listMessages(threadId, { ...options, fromSeq });
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    this.assertOpen();
    assertId(runId, 'runId');
    try {
      const result = this.#backend.getRun(runId);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async getLatestRun(threadId: string): Promise<RunRecord | undefined> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      const result = this.#backend.getLatestRun(threadId);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async listRuns(threadId: string, options: ListRunsOptions = {}): Promise<Page<RunRecord>> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    const limit = pageLimit(options.limit);
    assertCursor(options.cursor);
    try {
      const result = this.#backend.listRuns(threadId, { ...options, limit });
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async getThreadState(threadId: string): Promise<Record<string, unknown>> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      const result = this.#backend.getThreadState(threadId);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async commit(commit: CheckpointCommit): Promise<CheckpointResult> {
    this.assertOpen();
    assertCheckpointCommit(commit);
    try {
      const result = this.#backend.commit(commit);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async loadCheckpoint(threadId: string): Promise<ThreadCheckpoint | undefined> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      const result = this.#backend.loadCheckpoint(threadId);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async beginToolExecution(input: BeginToolExecutionInput): Promise<ToolExecution> {
    this.assertOpen();
    assertBeginToolExecution(input);
    try {
      const result = this.#backend.beginToolExecution(input);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async completeToolExecution(input: CompleteToolExecutionInput): Promise<ToolExecution> {
    this.assertOpen();
    assertId(input.runId, 'runId');
    assertId(input.toolCallId, 'toolCallId');
    assertObject(input.result, 'result');
    if (input.leaseToken !== undefined) assertInteger(input.leaseToken, 'leaseToken', 1);
    try {
      const result = this.#backend.completeToolExecution(input);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async getToolExecution(runId: string, toolCallId: string): Promise<ToolExecution | undefined> {
    this.assertOpen();
    assertId(runId, 'runId');
    assertId(toolCallId, 'toolCallId');
    try {
      const result = this.#backend.getToolExecution(runId, toolCallId);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async listToolExecutions(runId: string): Promise<ToolExecution[]> {
    this.assertOpen();
    assertId(runId, 'runId');
    try {
      const result = this.#backend.listToolExecutions(runId);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async acquireLease(input: AcquireLeaseInput): Promise<Lease> {
    this.assertOpen();
    assertId(input.threadId, 'threadId');
    assertId(input.owner, 'owner');
    assertId(input.runId, 'runId');
    assertInteger(input.ttlMs, 'ttlMs', 1);
    if (input.incarnation !== undefined) assertId(input.incarnation, 'incarnation');
    try {
      const result = this.#backend.acquireLease(input);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async renewLease(input: RenewLeaseInput): Promise<Lease> {
    this.assertOpen();
    assertId(input.threadId, 'threadId');
    assertInteger(input.token, 'token', 1);
    assertInteger(input.ttlMs, 'ttlMs', 1);
    try {
      const result = this.#backend.renewLease(input);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async releaseLease(input: ReleaseLeaseInput): Promise<boolean> {
    this.assertOpen();
    assertId(input.threadId, 'threadId');
    assertInteger(input.token, 'token', 1);
    try {
      const result = this.#backend.releaseLease(input);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async getLease(threadId: string): Promise<Lease | undefined> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      const result = this.#backend.getLease(threadId);
      return result instanceof Promise ? await result : result;
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  /** Closes the backend once; later calls (and closes) find the store closed. */
  close(): Promise<void> {
    this.#closed = true;
    this.#closing ??= this.#backend.close();
    return this.#closing;
  }

  /** True once `close()` was called. */
  protected get isClosed(): boolean {
    return this.#closed;
  }

  /** Throws `store-unavailable` (not retryable) once the store is closed; for a subclass's own methods. */
  protected assertOpen(): void {
    if (this.#closed) throw closedStore(this.kind);
  }

  /**
   * The error a call raises for `error`: a LunationError as it is, anything else `store-unavailable` once the
   * store is closed (the backend's connection went with it) or the backend's `toStoreError`.
   */
  protected toStoreError(error: unknown): LunationError {
    if (LunationError.isInstance(error)) return error;
    if (this.#closed) return closedStore(this.kind, error);
    return this.#backend.toStoreError(error);
  }
}

function closedStore(kind: string, cause?: unknown): LunationError {
  return new LunationError(
    'store-unavailable',
    `This ${kind} store is closed; create a new store to keep using it`,
    { retryable: false, ...(cause === undefined ? {} : { cause }) },
  );
}

function assertCursor(cursor: unknown): void {
  if (cursor !== undefined && typeof cursor !== 'string') {
    throw new LunationError(
      'invalid-argument',
      `cursor must be the nextCursor of a previous page, got ${typeof cursor}`,
    );
  }
}
