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
 * What a store implements beneath {@link CheckedStore}: the contract's operations, each atomic, called only
 * while the store is open and only with input that passed the contract's checks (ids, counts, tokens, page
 * sizes, the shape of a commit). A backend still checks what only its data can tell (a cursor it issued, a
 * value it cannot store) and raises the contract's errors for its rules (conflicts, leases).
 */
export interface StoreBackend
  extends Omit<LunationStore, 'specificationVersion' | 'listThreads' | 'listRuns' | 'listMessages'> {
  /** Threads in creation order (see `ThreadStore.listThreads`). */
  listThreads(options: CheckedListThreadsOptions): Promise<Page<ThreadRecord>>;
  /** Runs of a thread, oldest first (see `RunStore.listRuns`). */
  listRuns(threadId: string, options: CheckedListRunsOptions): Promise<Page<RunRecord>>;
  /** Committed messages in seq order (see `MessageStore.listMessages`). */
  listMessages(threadId: string, options: CheckedListMessagesOptions): Promise<MessageRecord[]>;
  /** The contract's error for anything else the backend's driver threw (a LunationError never gets here). */
  toStoreError(error: unknown): LunationError;
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
      return await this.#backend.createThread(input);
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async getThread(threadId: string): Promise<ThreadRecord | undefined> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      return await this.#backend.getThread(threadId);
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
      return await this.#backend.listThreads({ ...options, limit });
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async updateThreadMetadata(threadId: string, metadata: Record<string, unknown>): Promise<ThreadRecord> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    assertObject(metadata, 'metadata');
    try {
      return await this.#backend.updateThreadMetadata(threadId, metadata);
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async deleteThread(threadId: string): Promise<boolean> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      return await this.#backend.deleteThread(threadId);
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
      return await this.#backend.listMessages(threadId, { ...options, fromSeq });
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    this.assertOpen();
    assertId(runId, 'runId');
    try {
      return await this.#backend.getRun(runId);
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async getLatestRun(threadId: string): Promise<RunRecord | undefined> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      return await this.#backend.getLatestRun(threadId);
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
      return await this.#backend.listRuns(threadId, { ...options, limit });
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async getThreadState(threadId: string): Promise<Record<string, unknown>> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      return await this.#backend.getThreadState(threadId);
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async commit(commit: CheckpointCommit): Promise<CheckpointResult> {
    this.assertOpen();
    assertCheckpointCommit(commit);
    try {
      return await this.#backend.commit(commit);
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async loadCheckpoint(threadId: string): Promise<ThreadCheckpoint | undefined> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      return await this.#backend.loadCheckpoint(threadId);
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async beginToolExecution(input: BeginToolExecutionInput): Promise<ToolExecution> {
    this.assertOpen();
    assertBeginToolExecution(input);
    try {
      return await this.#backend.beginToolExecution(input);
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
      return await this.#backend.completeToolExecution(input);
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async getToolExecution(runId: string, toolCallId: string): Promise<ToolExecution | undefined> {
    this.assertOpen();
    assertId(runId, 'runId');
    assertId(toolCallId, 'toolCallId');
    try {
      return await this.#backend.getToolExecution(runId, toolCallId);
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async listToolExecutions(runId: string): Promise<ToolExecution[]> {
    this.assertOpen();
    assertId(runId, 'runId');
    try {
      return await this.#backend.listToolExecutions(runId);
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
      return await this.#backend.acquireLease(input);
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
      return await this.#backend.renewLease(input);
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async releaseLease(input: ReleaseLeaseInput): Promise<boolean> {
    this.assertOpen();
    assertId(input.threadId, 'threadId');
    assertInteger(input.token, 'token', 1);
    try {
      return await this.#backend.releaseLease(input);
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  async getLease(threadId: string): Promise<Lease | undefined> {
    this.assertOpen();
    assertId(threadId, 'threadId');
    try {
      return await this.#backend.getLease(threadId);
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
