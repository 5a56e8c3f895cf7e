import {
  type AcquireLeaseInput,
  type BeginToolExecutionInput,
  type CheckpointCommit,
  type CheckpointResult,
  type CompleteToolExecutionInput,
  type CreateThreadInput,
  type Lease,
  type ListMessagesOptions,
  type ListRunsOptions,
  type ListThreadsOptions,
  LunationError,
  type LunationStore,
  type MessageRecord,
  type Page,
  type ReleaseLeaseInput,
  type RenewLeaseInput,
  type RunRecord,
  type ThreadCheckpoint,
  type ThreadRecord,
  type ToolEffectInput,
  type ToolExecution,
  type ToolResult,
  type TransactionalToolEffects,
} from '@lunation/contract';
import { assertToolEffect, runEffectUntilAborted } from '@lunation/contract/store-utils';
import { type MemoryBackend, MemoryStore } from '@lunation/store-memory';
import { type CallFaults, countFault, drawCallFault, type FaultCounts, FaultSchedule } from './faults.js';
import { type Scheduler, type SimulatedProcess, unavailableError } from './scheduler.js';
import type { SeededRandom } from './seeded-random.js';
import { SimulatedDatabase, SimulatedTransaction } from './simulated-database.js';

/** Faults of a {@link SimulatedStore}: those of every call, plus refusals a real store can give. */
export interface StoreFaults extends CallFaults {
  /** A commit or `acquireLease` refused with `thread-busy` before it applies. */
  busy?: number;
  /** A commit refused with `store-conflict` before it applies. */
  conflict?: number;
}

/** Options of {@link SimulatedStore}. */
export interface SimulatedStoreOptions {
  /** The scheduler that completes the store's calls. */
  scheduler: Scheduler;
  /** The process whose calls these are. @default the scheduler's world process */
  process?: SimulatedProcess;
  /** Another SimulatedStore's `backend`, to share its data (as two processes share one database). */
  backend?: MemoryBackend;
  /** Faults to inject. @default none */
  faults?: StoreFaults;
  /** Fault counts to add to (shared by siblings). @default a new record */
  faultCounts?: FaultCounts;
  /** The world's fault schedule: each fault drawn is injected only if it allows it. @default every fault */
  schedule?: FaultSchedule;
  /** Another SimulatedStore's `database` (where transactional tool effects write), to share it. */
  database?: SimulatedDatabase;
  /** Operation counts to add to (shared by siblings). @default a new record */
  activity?: StoreActivity;
}

/** How many operations the store (and its siblings) applied: its data changes only with one. */
export interface StoreActivity {
  applied: number;
}

/**
 * A store for simulations: `MemoryStore` semantics on the world's virtual clock (the database's clock), where
 * every call is an operation the scheduler completes later, in the order the seed decides, with injectable
 * faults. Its transactional tool effects (`completeToolExecutionWithEffect`) write rows into `database` (a
 * {@link SimulatedTransaction}), committed with the call's ledger completion in the same operation. Without
 * faults it passes the store kit, transactional effects included.
 */
export class SimulatedStore implements LunationStore, TransactionalToolEffects {
  readonly specificationVersion = 'v2' as const;
  readonly kind = 'simulated';
  /** The data; pass it to another SimulatedStore to share it. */
  readonly backend: MemoryBackend;
  /** The store's own database table, where transactional tool effects land. */
  readonly database: SimulatedDatabase;
  /** The faults injected so far, by kind (shared with siblings made by `forProcess`). */
  readonly faultCounts: FaultCounts;
  /** The operations applied so far (shared with siblings made by `forProcess`). */
  readonly activity: StoreActivity;
  /** The scheduler that completes this store's calls. */
  readonly scheduler: Scheduler;
  private readonly owner: SimulatedProcess;
  private readonly inner: MemoryStore;
  private readonly faults: StoreFaults;
  private readonly random: SeededRandom;
  private readonly schedule: FaultSchedule;
  private closed = false;

  constructor(options: SimulatedStoreOptions) {
    this.scheduler = options.scheduler;
    this.owner = options.process ?? options.scheduler.world;
    const world = options.scheduler.world;
    this.inner = new MemoryStore({
      ...(options.backend === undefined ? {} : { backend: options.backend }),
      now: () => world.clock.now(),
    });
    this.backend = this.inner.backend;
    this.database = options.database ?? new SimulatedDatabase();
    this.faults = options.faults ?? {};
    this.faultCounts = options.faultCounts ?? {};
    this.activity = options.activity ?? { applied: 0 };
    this.random = options.scheduler.stream('store-faults');
    this.schedule = options.schedule ?? new FaultSchedule();
  }

  /** The same data, seen by another process (its calls are its own: they vanish when it crashes). */
  forProcess(process: SimulatedProcess, faults: StoreFaults = this.faults): SimulatedStore {
    return new SimulatedStore({
      scheduler: this.scheduler,
      process,
      backend: this.backend,
      faults,
      faultCounts: this.faultCounts,
      schedule: this.schedule,
      database: this.database,
      activity: this.activity,
    });
  }

  createThread(input: CreateThreadInput): Promise<ThreadRecord> {
    return this.call(`createThread ${input.id}`, true, () => this.inner.createThread(input));
  }

  getThread(threadId: string): Promise<ThreadRecord | undefined> {
    return this.call(`getThread ${threadId}`, false, () => this.inner.getThread(threadId));
  }

  listThreads(options?: ListThreadsOptions): Promise<Page<ThreadRecord>> {
    return this.call('listThreads', false, () => this.inner.listThreads(options));
  }

  updateThreadMetadata(threadId: string, metadata: Record<string, unknown>): Promise<ThreadRecord> {
    return this.call(`updateThreadMetadata ${threadId}`, true, () =>
      this.inner.updateThreadMetadata(threadId, metadata),
    );
  }

  deleteThread(threadId: string): Promise<boolean> {
    return this.call(`deleteThread ${threadId}`, true, () => this.inner.deleteThread(threadId));
  }

  listMessages(threadId: string, options?: ListMessagesOptions): Promise<MessageRecord[]> {
    return this.call(`listMessages ${threadId}`, false, () => this.inner.listMessages(threadId, options));
  }

  getRun(runId: string): Promise<RunRecord | undefined> {
    return this.call(`getRun ${runId}`, false, () => this.inner.getRun(runId));
  }

  getLatestRun(threadId: string): Promise<RunRecord | undefined> {
    return this.call(`getLatestRun ${threadId}`, false, () => this.inner.getLatestRun(threadId));
  }

  listRuns(threadId: string, options?: ListRunsOptions): Promise<Page<RunRecord>> {
    return this.call(`listRuns ${threadId}`, false, () => this.inner.listRuns(threadId, options));
  }

  getThreadState(threadId: string): Promise<Record<string, unknown>> {
    return this.call(`getThreadState ${threadId}`, false, () => this.inner.getThreadState(threadId));
  }

  commit(commit: CheckpointCommit): Promise<CheckpointResult> {
    const label = `commit ${commit.threadId}@${commit.expectedMessageCount}+${commit.messages?.length ?? 0} lease=${commit.leaseToken ?? '-'}`;
    const refusal = this.refusal(commit.threadId, ['busy', 'conflict']);
    return this.call(label, true, () => this.inner.commit(commit), refusal);
  }

  loadCheckpoint(threadId: string): Promise<ThreadCheckpoint | undefined> {
    return this.call(`loadCheckpoint ${threadId}`, false, () => this.inner.loadCheckpoint(threadId));
  }

  beginToolExecution(input: BeginToolExecutionInput): Promise<ToolExecution> {
    return this.call(`beginToolExecution ${input.runId}/${input.toolCallId}`, true, () =>
      this.inner.beginToolExecution(input),
    );
  }

  completeToolExecution(input: CompleteToolExecutionInput): Promise<ToolExecution> {
    return this.call(`completeToolExecution ${input.runId}/${input.toolCallId}`, true, () =>
      this.inner.completeToolExecution(input),
    );
  }

  completeToolExecutionWithEffect(
    input: ToolEffectInput,
    effect: (transaction: unknown) => Promise<ToolResult>,
  ): Promise<ToolExecution> {
    try {
      assertToolEffect(input, effect);
    } catch (error) {
      return Promise.reject(error);
    }
    const { runId, toolCallId, leaseToken, signal } = input;
    return this.call(`completeToolExecutionWithEffect ${runId}/${toolCallId}`, true, async () => {
      const existing = await this.inner.getToolExecution(runId, toolCallId);
      if (existing === undefined) {
        throw new LunationError(
          'not-found',
          `Tool call "${toolCallId}" of run "${runId}" was never begun; call beginToolExecution first`,
          { details: { runId, toolCallId } },
        );
      }
      if (existing.status === 'completed') return existing;
      const transaction = new SimulatedTransaction(runId, toolCallId);
      let result: ToolResult;
      try {
        result = await runEffectUntilAborted(() => effect(transaction), signal);
      } catch (error) {
        transaction.close(); // rolled back
        throw error;
      }
      const rows = transaction.close();
      // Checks the lease and records the completion; a refusal rolls the rows back with it.
      const entry = await this.inner.completeToolExecution({
        runId,
        toolCallId,
        result,
        ...(leaseToken === undefined ? {} : { leaseToken }),
      });
      this.database.apply(rows);
      return entry;
    });
  }

  getToolExecution(runId: string, toolCallId: string): Promise<ToolExecution | undefined> {
    return this.call(`getToolExecution ${runId}/${toolCallId}`, false, () =>
      this.inner.getToolExecution(runId, toolCallId),
    );
  }

  listToolExecutions(runId: string): Promise<ToolExecution[]> {
    return this.call(`listToolExecutions ${runId}`, false, () => this.inner.listToolExecutions(runId));
  }

  acquireLease(input: AcquireLeaseInput): Promise<Lease> {
    const refusal = this.refusal(input.threadId, ['busy']);
    return this.call(
      `acquireLease ${input.threadId} ${input.owner}`,
      true,
      () => this.inner.acquireLease(input),
      refusal,
    );
  }

  renewLease(input: RenewLeaseInput): Promise<Lease> {
    return this.call(`renewLease ${input.threadId}#${input.token}`, true, () => this.inner.renewLease(input));
  }

  releaseLease(input: ReleaseLeaseInput): Promise<boolean> {
    return this.call(`releaseLease ${input.threadId}#${input.token}`, true, () =>
      this.inner.releaseLease(input),
    );
  }

  getLease(threadId: string): Promise<Lease | undefined> {
    return this.call(`getLease ${threadId}`, false, () => this.inner.getLease(threadId));
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** A refusal (thread-busy / store-conflict) drawn for a commit or lease call, or undefined. */
  private refusal(threadId: string, kinds: readonly ('busy' | 'conflict')[]): LunationError | undefined {
    for (const kind of kinds) {
      if (!this.random.chance(this.faults[kind] ?? 0) || !this.inject(kind)) continue;
      return kind === 'busy'
        ? new LunationError(
            'thread-busy',
            `Simulated fault: thread "${threadId}" reported busy; retry later`,
            {
              details: { threadId, simulated: true },
            },
          )
        : new LunationError(
            'store-conflict',
            `Simulated fault: a commit to thread "${threadId}" reported a conflict; reload and retry`,
            { details: { threadId, simulated: true } },
          );
    }
    return undefined;
  }

  /** Puts a drawn fault to the schedule; counts it when injected. */
  private inject(kind: string): boolean {
    if (!this.schedule.allows(`store.${kind}`)) return false;
    countFault(this.faultCounts, kind);
    return true;
  }

  private call<T>(
    label: string,
    write: boolean,
    apply: () => Promise<T>,
    refusal?: LunationError,
  ): Promise<T> {
    if (this.closed) {
      return Promise.reject(
        new LunationError(
          'store-unavailable',
          'This SimulatedStore is closed; make a new one on its backend',
          {
            retryable: false,
          },
        ),
      );
    }
    const name = `store.${label}`;
    const { fault, delayMs } = drawCallFault(this.random, this.faults, write, (kind) =>
      // A refused call is refused whatever else was drawn for it: those faults are not injected.
      kind === 'late' || refusal === undefined ? this.inject(kind) : false,
    );
    return this.scheduler.operation(
      this.owner,
      name,
      async () => {
        this.activity.applied++;
        if (refusal !== undefined) throw refusal;
        if (fault === 'unavailable' || fault === 'lost-write') throw unavailableError(name);
        const result = await apply();
        if (fault === 'unacknowledged-write') throw unavailableError(name);
        return result;
      },
      { delayMs },
    );
  }
}
