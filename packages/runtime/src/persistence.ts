import {
  type AcquireLeaseInput,
  assertSpecificationVersion,
  type BeginToolExecutionInput,
  type CheckpointCommit,
  type Clock,
  type Lease,
  LunationError,
  type LunationStore,
  type Message,
  type RunRecord,
  supportsToolEffects,
  systemClock,
  type ThreadCheckpoint,
  type ToolEffectInput,
  type ToolExecution,
  type ToolResult,
} from '@lunation/contract';

/** A thread as a run starts from it. */
export interface LoadedThread {
  messages: Message[];
  threadState: Record<string, unknown>;
  latestRun: RunRecord | undefined;
  resourceId: string | undefined;
}

/** How the loop keeps threads: a durable store, or this process's memory when no store is configured. */
export interface Persistence {
  readonly durable: boolean;
  /** Whether the thread exists (without loading it). */
  hasThread(threadId: string): Promise<boolean>;
  /**
   * The thread as a run starts from it, created (empty, owned by `resourceId`) when it does not exist; with
   * `create` false a missing thread is `not-found` instead, and nothing is written.
   */
  open(threadId: string, resourceId: string | undefined, create?: boolean): Promise<LoadedThread>;
  createThread(
    threadId: string,
    resourceId: string | undefined,
    metadata?: Record<string, unknown>,
  ): Promise<void>;
  commit(commit: CheckpointCommit): Promise<number>;
  beginTool(input: BeginToolExecutionInput): Promise<ToolExecution | undefined>;
  completeTool(input: {
    runId: string;
    toolCallId: string;
    result: ToolResult;
    leaseToken?: number;
  }): Promise<void>;
  getTool(runId: string, toolCallId: string): Promise<ToolExecution | undefined>;
  /**
   * A tool's effect in the store's own database, committed with the call's ledger completion; `unsupported`
   * when the store cannot (see `TransactionalToolEffects`).
   */
  completeToolWithEffect(
    input: ToolEffectInput,
    effect: (transaction: unknown) => Promise<ToolResult>,
  ): Promise<ToolExecution>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  acquireLease(input: AcquireLeaseInput): Promise<Lease | undefined>;
  renewLease(threadId: string, token: number, ttlMs: number): Promise<void>;
  releaseLease(threadId: string, token: number): Promise<boolean>;
  getLease(threadId: string): Promise<Lease | undefined>;
  /** Deletes the thread with everything in it; false when it did not exist. */
  deleteThread(threadId: string): Promise<boolean>;
}

/** Persistence through a LunationStore: checkpoints, the execution ledger and leases. */
export class StorePersistence implements Persistence {
  readonly durable = true;
  constructor(readonly store: LunationStore) {
    assertSpecificationVersion('store', store, `store "${store.kind}"`);
  }

  async hasThread(threadId: string): Promise<boolean> {
    return (await this.store.getThread(threadId)) !== undefined;
  }

  async open(threadId: string, resourceId: string | undefined, create = true): Promise<LoadedThread> {
    const checkpoint = await this.store.loadCheckpoint(threadId);
    if (checkpoint) return loadedFromCheckpoint(checkpoint);
    if (!create) throw noThread(threadId);
    try {
      await this.store.createThread(
        resourceId === undefined ? { id: threadId } : { id: threadId, resourceId },
      );
    } catch (error) {
      // Another process created it first: fine.
      if (!LunationError.hasCode(error, 'store-conflict')) throw error;
    }
    return { messages: [], threadState: {}, latestRun: undefined, resourceId };
  }

  async createThread(threadId: string, resourceId: string | undefined, metadata?: Record<string, unknown>) {
    try {
      await this.store.createThread({
        id: threadId,
        ...(resourceId === undefined ? {} : { resourceId }),
        ...(metadata === undefined ? {} : { metadata }),
      });
    } catch (error) {
      // Another process created it first: fine.
      if (!LunationError.hasCode(error, 'store-conflict')) throw error;
    }
  }

  // The calls below run on every step: plain promise chains, no async function around the store's promise.

  commit(commit: CheckpointCommit): Promise<number> {
    return this.store.commit(commit).then(messageCountOf);
  }

  beginTool(input: BeginToolExecutionInput): Promise<ToolExecution> {
    return this.store.beginToolExecution(input);
  }

  completeTool(input: {
    runId: string;
    toolCallId: string;
    result: ToolResult;
    leaseToken?: number;
  }): Promise<void> {
    return this.store.completeToolExecution(input).then(nothing);
  }

  getTool(runId: string, toolCallId: string): Promise<ToolExecution | undefined> {
    return this.store.getToolExecution(runId, toolCallId);
  }

  completeToolWithEffect(
    input: ToolEffectInput,
    effect: (transaction: unknown) => Promise<ToolResult>,
  ): Promise<ToolExecution> {
    const { store } = this;
    if (!supportsToolEffects(store)) return Promise.reject(noTransactions(store.kind));
    return store.completeToolExecutionWithEffect(input, effect);
  }

  getRun(runId: string): Promise<RunRecord | undefined> {
    return this.store.getRun(runId);
  }

  acquireLease(input: AcquireLeaseInput): Promise<Lease> {
    return this.store.acquireLease(input);
  }

  renewLease(threadId: string, token: number, ttlMs: number): Promise<void> {
    return this.store.renewLease({ threadId, token, ttlMs }).then(nothing);
  }

  releaseLease(threadId: string, token: number): Promise<boolean> {
    return this.store.releaseLease({ threadId, token });
  }

  getLease(threadId: string): Promise<Lease | undefined> {
    return this.store.getLease(threadId);
  }

  deleteThread(threadId: string): Promise<boolean> {
    return this.store.deleteThread(threadId);
  }
}

function loadedFromCheckpoint(checkpoint: ThreadCheckpoint): LoadedThread {
  return {
    messages: checkpoint.messages.map((record) => record.message),
    threadState: checkpoint.threadState,
    latestRun: checkpoint.latestRun,
    resourceId: checkpoint.thread.resourceId,
  };
}

function messageCountOf(result: { messageCount: number }): number {
  return result.messageCount;
}

function nothing(): void {}

interface LocalThread {
  messages: Message[];
  threadState: Record<string, unknown>;
  /** Ids of the thread's runs (kept in `InProcessPersistence.runs`); undefined before the first. */
  runIds: string[] | undefined;
  latestRun: RunRecord | undefined;
  resourceId: string | undefined;
  lastUsedAt: number;
}

/** How many threads a runtime without a store keeps in memory. */
export interface InProcessRetention {
  /** Most threads kept; beyond it the least recently used are dropped. @default no limit */
  maxThreads?: number;
  /** Threads unused for longer than this are dropped. @default no limit */
  maxIdleMs?: number;
}

/**
 * Threads kept in this process only (no store configured): history and thread state live across runs of one
 * AgentRuntime, nothing survives the process, and there is no ledger or lease (the runtime's own
 * one-run-per-thread check still applies). Threads are dropped by `deleteThread` and, with a retention
 * policy, when the least recently used go past `maxThreads` or idle past `maxIdleMs` (never while a run of
 * theirs is active).
 */
export class InProcessPersistence implements Persistence {
  readonly durable = false;
  /** In least recently used order. */
  private threads = new Map<string, LocalThread>();
  private runs = new Map<string, RunRecord>();

  constructor(
    private readonly retention: InProcessRetention = {},
    private readonly isActive: (threadId: string) => boolean = () => false,
    private readonly clock: Clock = systemClock,
  ) {}

  get threadCount(): number {
    return this.threads.size;
  }

  async hasThread(threadId: string): Promise<boolean> {
    return this.use(threadId) !== undefined;
  }

  async open(threadId: string, resourceId: string | undefined, create = true): Promise<LoadedThread> {
    return this.openNow(threadId, resourceId, create);
  }

  /**
   * {@link open} without a promise: the runtime's common path (a run on a thread of this process) stays
   * synchronous up to the run's first model call.
   */
  openNow(threadId: string, resourceId: string | undefined, create = true): LoadedThread {
    const existing = this.use(threadId);
    if (existing) return loadedFrom(existing);
    if (!create) throw noThread(threadId);
    const thread = this.add(threadId, resourceId);
    // The loop appends to its history as the run goes: never the thread's own array.
    return { messages: [], threadState: thread.threadState, latestRun: undefined, resourceId };
  }

  async createThread(threadId: string, resourceId: string | undefined): Promise<void> {
    if (!this.use(threadId)) this.add(threadId, resourceId);
  }

  private add(threadId: string, resourceId: string | undefined): LocalThread {
    const thread: LocalThread = {
      messages: [],
      threadState: {},
      runIds: undefined,
      latestRun: undefined,
      resourceId,
      lastUsedAt: this.clock.now(),
    };
    this.threads.set(threadId, thread);
    this.prune();
    return thread;
  }

  async commit(commit: CheckpointCommit): Promise<number> {
    const thread = this.use(commit.threadId);
    if (!thread) throw new LunationError('not-found', `Thread "${commit.threadId}" does not exist`);
    if (thread.messages.length !== commit.expectedMessageCount) {
      throw new LunationError(
        'store-conflict',
        `Thread "${commit.threadId}" has ${thread.messages.length} messages, expected ${commit.expectedMessageCount}`,
      );
    }
    if (thread.messages.length === 0) thread.messages = commit.messages.slice();
    else for (const message of commit.messages) thread.messages.push(message);
    if (commit.threadState) thread.threadState = commit.threadState;
    if (commit.run) {
      const runId = commit.run.identity.runId;
      // A run id names one run of one thread: known here means known in this thread.
      if (!this.runs.has(runId)) {
        thread.latestRun = commit.run;
        if (thread.runIds === undefined) thread.runIds = [runId];
        else thread.runIds.push(runId);
      } else if (thread.latestRun?.identity.runId === runId) thread.latestRun = commit.run;
      this.runs.set(runId, commit.run);
    }
    this.prune();
    return thread.messages.length;
  }

  async deleteThread(threadId: string): Promise<boolean> {
    const thread = this.threads.get(threadId);
    if (!thread) return false;
    this.drop(threadId, thread);
    return true;
  }

  async beginTool(): Promise<undefined> {
    return undefined;
  }

  async completeTool(): Promise<void> {}

  async completeToolWithEffect(): Promise<ToolExecution> {
    throw noTransactions(undefined);
  }

  async getTool(): Promise<undefined> {
    return undefined;
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    return this.runs.get(runId);
  }

  async acquireLease(): Promise<undefined> {
    return undefined;
  }

  async renewLease(): Promise<void> {}

  async releaseLease(): Promise<boolean> {
    return true;
  }

  async getLease(): Promise<undefined> {
    return undefined;
  }

  /** The thread, marked as just used (moved to the back of the LRU order when a policy needs the order). */
  private use(threadId: string): LocalThread | undefined {
    const thread = this.threads.get(threadId);
    if (!thread || !this.retains) return thread;
    this.threads.delete(threadId);
    this.threads.set(threadId, thread);
    thread.lastUsedAt = this.clock.now();
    return thread;
  }

  private drop(threadId: string, thread: LocalThread): void {
    this.threads.delete(threadId);
    for (const runId of thread.runIds ?? []) this.runs.delete(runId);
  }

  private get retains(): boolean {
    return this.retention.maxThreads !== undefined || this.retention.maxIdleMs !== undefined;
  }

  /** Drops the least recently used threads past the retention policy, skipping ones with an active run. */
  private prune(): void {
    const { maxThreads, maxIdleMs } = this.retention;
    if (maxThreads === undefined && maxIdleMs === undefined) return;
    const idleBefore = maxIdleMs === undefined ? Number.NEGATIVE_INFINITY : this.clock.now() - maxIdleMs;
    let excess = maxThreads === undefined ? 0 : this.threads.size - maxThreads;
    for (const [threadId, thread] of this.threads) {
      if (excess <= 0 && thread.lastUsedAt >= idleBefore) break;
      if (this.isActive(threadId)) continue;
      this.drop(threadId, thread);
      excess--;
    }
  }
}

/** A kept thread as a run starts from it: the messages are copied, since the loop appends to its history. */
function loadedFrom(thread: LocalThread): LoadedThread {
  return {
    messages: thread.messages.slice(),
    threadState: thread.threadState,
    latestRun: thread.latestRun,
    resourceId: thread.resourceId,
  };
}

/** `unsupported`: a transactional tool effect asked of a store (or no store) that has no transactions. */
export function noTransactions(kind: string | undefined): LunationError {
  return new LunationError(
    'unsupported',
    `${kind === undefined ? 'This runtime has no store' : `The ${kind} store`} cannot commit a tool's effect with its ledger completion; use SqliteStore or PostgresStore for context.transaction()`,
    { details: { store: kind ?? null } },
  );
}

/** A thread that does not exist, where one must (decisions name it). */
function noThread(threadId: string): LunationError {
  return new LunationError('not-found', `No thread "${threadId}"`);
}
