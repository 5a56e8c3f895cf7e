import {
  type AcquireLeaseInput,
  type BeginToolExecutionInput,
  type CheckpointCommit,
  type CheckpointResult,
  type Clock,
  type CompleteToolExecutionInput,
  type CreateThreadInput,
  type Lease,
  LunationError,
  type MessageRecord,
  type Page,
  type ReleaseLeaseInput,
  type RenewLeaseInput,
  type RunRecord,
  systemClock,
  type ThreadCheckpoint,
  type ThreadRecord,
  type ToolEffectInput,
  type ToolExecution,
  type ToolResult,
} from '@lunation/contract';
import {
  assertId,
  assertInteger,
  assertObject,
  type CheckedListMessagesOptions,
  type CheckedListRunsOptions,
  type CheckedListThreadsOptions,
  decodeCursor,
  encodeCursor,
  leaseHeldElsewhere,
  ledgerEntryElsewhere,
  runEffectUntilAborted,
  type StoreBackend,
  toJsonText,
  unissuedLeaseToken,
} from '@lunation/contract/store-utils';
import Database from 'better-sqlite3';
import { CompiledQuery, type Kysely, type Transaction as KyselyTransaction } from 'kysely';
import { BackgroundCheckpointer } from './background-checkpointer.js';
import { driverProblem, driverVersion } from './driver-support.js';
import { drive, KyselyRunner } from './kysely-runner.js';
import { nativeModuleError } from './native-module-error.js';
import type { SqliteClient } from './sqlite-client.js';
import { createKysely, createMigrator, migrate } from './sqlite-migrations.js';
import {
  allStatement,
  getStatement,
  type OperationRunner,
  runStatement,
  type SqliteOperation,
  type Transaction,
} from './sqlite-operation.js';
import type {
  SqliteStoreKyselyOptions,
  SqliteStoreOptions,
  SqliteStorePathOptions,
} from './sqlite-store-options.js';
import { SyncRunner } from './sync-runner.js';
import { toStoreError } from './to-store-error.js';

interface ThreadRow {
  id: string;
  resourceId: string | null;
  metadata: string;
  messageCount: number;
  createdAt: number;
  updatedAt: number;
}

interface MessageRow {
  seq: number;
  message: string;
  runId: string | null;
  createdAt: number;
}

interface RunRow {
  record: string;
  createdAt: number;
  seq: number;
}

/** A commit whose input is checked, with its records as JSON text. */
interface PreparedCommit {
  commit: CheckpointCommit;
  messages: string[];
  runJson: string | undefined;
  stateJson: string | undefined;
  toolExecutions: string[][];
  clock: Clock;
}

interface RecordRow {
  record: string;
}

interface CommitHead {
  messageCount: number;
  leaseToken: number | null;
  /** NULL once released. */
  leaseExpiresAt: number | null;
}

interface LeaseRow {
  token: number;
  owner: string;
  incarnation: string | null;
  runId: string;
  renewedAt: number;
  expiresAt: number | null;
}

// A thread's message count and last change are derived from its newest message (the messages primary key),
// so a commit of messages never rewrites the thread row.
const threadColumns = `t.id, t.resource_id AS resourceId, t.metadata, coalesce(m.seq, 0) AS messageCount,
  t.created_at AS createdAt, max(t.updated_at, coalesce(m.created_at, 0)) AS updatedAt`;
const threadsWithLastMessage = `lunation_threads t LEFT JOIN lunation_messages m
  ON m.thread_id = t.id AND m.seq = (SELECT max(seq) FROM lunation_messages WHERE thread_id = t.id)`;
const commitHeadColumns = `coalesce((SELECT max(seq) FROM lunation_messages WHERE thread_id = lunation_threads.id), 0) AS messageCount,
  (SELECT token FROM lunation_leases WHERE thread_id = lunation_threads.id) AS leaseToken,
  (SELECT expires_at FROM lunation_leases WHERE thread_id = lunation_threads.id) AS leaseExpiresAt`;
const leaseColumns =
  'token, owner, incarnation, run_id AS runId, renewed_at AS renewedAt, expires_at AS expiresAt';

/** Every statement of the store, prepared once per connection by `SyncRunner`. */
const statements = {
  insertThread: runStatement(
    `INSERT INTO lunation_threads (id, resource_id, metadata, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
  ),
  selectThread: getStatement<ThreadRow>(
    `SELECT ${threadColumns} FROM ${threadsWithLastMessage} WHERE t.id = ?`,
  ),
  listThreads: allStatement<ThreadRow>(
    `SELECT ${threadColumns} FROM ${threadsWithLastMessage}
     WHERE (t.created_at, t.id) > (?, ?) ORDER BY t.created_at, t.id LIMIT ?`,
  ),
  listThreadsOfResource: allStatement<ThreadRow>(
    `SELECT ${threadColumns} FROM ${threadsWithLastMessage}
     WHERE t.resource_id = ? AND (t.created_at, t.id) > (?, ?) ORDER BY t.created_at, t.id LIMIT ?`,
  ),
  updateMetadata: runStatement('UPDATE lunation_threads SET metadata = ?, updated_at = ? WHERE id = ?'),
  deleteMessages: runStatement('DELETE FROM lunation_messages WHERE thread_id = ?'),
  deleteRuns: runStatement('DELETE FROM lunation_runs WHERE thread_id = ?'),
  deleteToolExecutions: runStatement('DELETE FROM lunation_tool_executions WHERE thread_id = ?'),
  deleteThread: runStatement('DELETE FROM lunation_threads WHERE id = ?'),

  // What a commit checks (the thread exists, its lease token, its message count), read without writing a page.
  // The lease row joined once (the RETURNING form below must use a subquery per column).
  commitHead: getStatement<CommitHead>(
    `SELECT coalesce((SELECT max(seq) FROM lunation_messages WHERE thread_id = t.id), 0) AS messageCount,
       l.token AS leaseToken, l.expires_at AS leaseExpiresAt
     FROM lunation_threads t LEFT JOIN lunation_leases l ON l.thread_id = t.id WHERE t.id = ?`,
  ),
  // The same, for a commit that changes what its messages do not record (the state, or no messages at all).
  touchThread: getStatement<CommitHead>(
    `UPDATE lunation_threads SET updated_at = max(updated_at, ?), state = coalesce(?, state) WHERE id = ?
     RETURNING ${commitHeadColumns}`,
  ),
  insertMessage: runStatement(
    'INSERT INTO lunation_messages (thread_id, seq, message, run_id, created_at) VALUES (?, ?, ?, ?, ?)',
  ),
  // A run keeps the position (created_at, seq) of its first commit; later commits replace the record.
  updateRun: runStatement('UPDATE lunation_runs SET record = ? WHERE run_id = ? AND thread_id = ?'),
  insertRun: runStatement(
    `INSERT INTO lunation_runs (run_id, thread_id, record, created_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (run_id) DO NOTHING`,
  ),
  // An entry never changes thread; leaving thread_id out of SET spares its index a page write per update.
  // A completed entry is final: the update keeps its record (and still counts as a change).
  upsertToolExecution: runStatement(
    `INSERT INTO lunation_tool_executions (run_id, tool_call_id, thread_id, record) VALUES (?, ?, ?, ?)
     ON CONFLICT (run_id, tool_call_id) DO UPDATE SET record =
       CASE WHEN json_extract(record, '$.status') = 'completed' THEN record ELSE excluded.record END
     WHERE thread_id = excluded.thread_id`,
  ),

  listMessages: allStatement<MessageRow>(
    `SELECT seq, message, run_id AS runId, created_at AS createdAt FROM lunation_messages
     WHERE thread_id = ? AND seq >= ? AND seq <= ? ORDER BY seq LIMIT ?`,
  ),
  selectThreadState: getStatement<{ state: string | null }>(
    'SELECT state FROM lunation_threads WHERE id = ?',
  ),
  selectRun: getStatement<RecordRow>('SELECT record FROM lunation_runs WHERE run_id = ?'),
  latestRun: getStatement<RecordRow>(
    'SELECT record FROM lunation_runs WHERE thread_id = ? ORDER BY created_at DESC, seq DESC LIMIT 1',
  ),
  listRuns: allStatement<RunRow>(
    `SELECT record, created_at AS createdAt, seq FROM lunation_runs
     WHERE thread_id = ? AND (created_at, seq) > (?, ?) ORDER BY created_at, seq LIMIT ?`,
  ),

  // Takes the write lock first thing in a deferred transaction (the busy timeout applies, as to BEGIN IMMEDIATE).
  touchToolExecution: runStatement(
    'UPDATE lunation_tool_executions SET record = record WHERE run_id = ? AND tool_call_id = ?',
  ),
  selectToolExecution: getStatement<RecordRow>(
    'SELECT record FROM lunation_tool_executions WHERE run_id = ? AND tool_call_id = ?',
  ),
  listToolExecutions: allStatement<RecordRow>(
    'SELECT record FROM lunation_tool_executions WHERE run_id = ? ORDER BY rowid',
  ),

  selectLease: getStatement<LeaseRow>(`SELECT ${leaseColumns} FROM lunation_leases WHERE thread_id = ?`),
  selectLeaseToken: getStatement<{ token: number }>('SELECT token FROM lunation_leases WHERE thread_id = ?'),
  upsertLease: runStatement(
    `INSERT INTO lunation_leases (thread_id, token, owner, incarnation, run_id, renewed_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (thread_id) DO UPDATE SET token = excluded.token, owner = excluded.owner,
       incarnation = excluded.incarnation, run_id = excluded.run_id, renewed_at = excluded.renewed_at,
       expires_at = excluded.expires_at`,
  ),
  renewLease: getStatement<LeaseRow>(
    `UPDATE lunation_leases SET renewed_at = ?, expires_at = ?
     WHERE thread_id = ? AND token = ? AND expires_at IS NOT NULL RETURNING ${leaseColumns}`,
  ),
  endLease: runStatement(
    'UPDATE lunation_leases SET expires_at = NULL WHERE thread_id = ? AND token = ? AND expires_at IS NOT NULL',
  ),
  endAnyLease: runStatement('UPDATE lunation_leases SET expires_at = NULL WHERE thread_id = ?'),
};

/**
 * What every store method does in the database, once its input is checked: each yields its statements to the
 * store's runner (see `SqliteOperation`). Defined once here, not as closures per call, which V8 creates slowly.
 */
const operations = {
  *createThread(input: CreateThreadInput, metadataJson: string, clock: Clock): SqliteOperation<ThreadRecord> {
    const now = clock.now();
    const { changes } = yield* statements.insertThread([
      input.id,
      input.resourceId ?? null,
      metadataJson,
      now,
      now,
    ]);
    if (changes === 0) {
      throw new LunationError(
        'store-conflict',
        `Thread "${input.id}" already exists; pick another id or load the existing thread`,
        { details: { threadId: input.id } },
      );
    }
    const thread: ThreadRecord = {
      id: input.id,
      metadata: JSON.parse(metadataJson),
      messageCount: 0,
      createdAt: now,
      updatedAt: now,
    };
    if (input.resourceId !== undefined) thread.resourceId = input.resourceId;
    return thread;
  },

  *getThread(threadId: string): SqliteOperation<ThreadRecord | undefined> {
    const row = yield* statements.selectThread([threadId]);
    return row && toThread(row);
  },

  *listThreads(
    resourceId: string | undefined,
    createdAt: number,
    id: string | number,
    limit: number,
  ): SqliteOperation<Page<ThreadRecord>> {
    const rows =
      resourceId === undefined
        ? yield* statements.listThreads([createdAt, id, limit + 1])
        : yield* statements.listThreadsOfResource([resourceId, createdAt, id, limit + 1]);
    return toPage(rows.map(toThread), limit, (thread) => encodeCursor([thread.createdAt, thread.id]));
  },

  *updateThreadMetadata(threadId: string, metadataJson: string, clock: Clock): SqliteOperation<ThreadRecord> {
    const { changes } = yield* statements.updateMetadata([metadataJson, clock.now(), threadId]);
    const row = changes === 0 ? undefined : yield* statements.selectThread([threadId]);
    if (!row) throw threadNotFound(threadId);
    return toThread(row);
  },

  *deleteThread(threadId: string): SqliteOperation<boolean> {
    if (!(yield* statements.selectThread([threadId]))) return false;
    yield* statements.deleteMessages([threadId]);
    yield* statements.deleteRuns([threadId]);
    yield* statements.deleteToolExecutions([threadId]);
    yield* statements.endAnyLease([threadId]);
    yield* statements.deleteThread([threadId]);
    return true;
  },

  *listMessages(
    threadId: string,
    fromSeq: number,
    toSeq: number,
    limit: number,
  ): SqliteOperation<MessageRecord[]> {
    const rows = yield* statements.listMessages([threadId, fromSeq, toSeq, limit]);
    return rows.map((row) => toMessage(threadId, row));
  },

  *getRun(runId: string): SqliteOperation<RunRecord | undefined> {
    return parseRecord<RunRecord>(yield* statements.selectRun([runId]));
  },

  *getLatestRun(threadId: string): SqliteOperation<RunRecord | undefined> {
    return parseRecord<RunRecord>(yield* statements.latestRun([threadId]));
  },

  *listRuns(
    threadId: string,
    createdAt: number,
    seq: string | number,
    limit: number,
  ): SqliteOperation<Page<RunRecord>> {
    const rows = yield* statements.listRuns([threadId, createdAt, seq, limit + 1]);
    const page = toPage(rows, limit, (row) => encodeCursor([row.createdAt, row.seq]));
    return {
      items: page.items.map((row) => JSON.parse(row.record) as RunRecord),
      ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
    };
  },

  *commit({
    commit,
    messages,
    runJson,
    stateJson,
    toolExecutions,
    clock,
  }: PreparedCommit): SqliteOperation<CheckpointResult> {
    const { threadId, expectedMessageCount, run } = commit;
    const runId = run?.identity.runId;
    const now = clock.now();
    // A rejected commit throws, and its runner rolls the transaction (and so the touch) back.
    const head =
      messages.length === 0 || stateJson !== undefined
        ? yield* statements.touchThread([now, stateJson ?? null, threadId])
        : yield* statements.commitHead([threadId]);
    const rejection = commitRejection(commit, head, now);
    if (rejection) throw rejection;
    let seq = expectedMessageCount;
    for (const message of messages) {
      seq += 1;
      yield* statements.insertMessage([threadId, seq, message, commit.runId ?? runId ?? null, now]);
    }
    if (
      run !== undefined &&
      (yield* statements.updateRun([runJson, runId, threadId])).changes === 0 &&
      (yield* statements.insertRun([runId, threadId, runJson, run.createdAt])).changes === 0
    ) {
      throw invalidCommit(`run "${runId}" already belongs to another thread`);
    }
    for (const execution of toolExecutions) {
      if ((yield* statements.upsertToolExecution(execution)).changes === 0) {
        throw invalidCommit(`tool call "${execution[1]}" of run "${execution[0]}" belongs to another thread`);
      }
    }
    return { messageCount: seq };
  },

  *loadCheckpoint(threadId: string): SqliteOperation<ThreadCheckpoint | undefined> {
    const row = yield* statements.selectThread([threadId]);
    if (!row) return undefined;
    const messages = yield* statements.listMessages([threadId, 1, Number.MAX_SAFE_INTEGER, -1]);
    return {
      thread: toThread(row),
      messages: messages.map((message) => toMessage(threadId, message)),
      threadState: yield* readThreadState(threadId),
      latestRun: parseRecord<RunRecord>(yield* statements.latestRun([threadId])),
    };
  },

  *beginToolExecution(input: BeginToolExecutionInput, clock: Clock): SqliteOperation<ToolExecution> {
    yield* assertFreshLease(input.threadId, input.leaseToken);
    const existing = parseRecord<ToolExecution>(
      yield* statements.selectToolExecution([input.runId, input.toolCallId]),
    );
    if (existing !== undefined && existing.threadId !== input.threadId) {
      throw ledgerEntryElsewhere(input.runId, input.toolCallId, existing.threadId);
    }
    if (existing?.status === 'completed') return existing;
    const execution: ToolExecution = existing
      ? { ...existing, attempts: existing.attempts + 1 }
      : {
          runId: input.runId,
          toolCallId: input.toolCallId,
          threadId: input.threadId,
          toolName: input.toolName,
          idempotencyKey: input.idempotencyKey,
          status: 'in-flight',
          attempts: 1,
          startedAt: clock.now(),
        };
    yield* statements.upsertToolExecution([
      execution.runId,
      execution.toolCallId,
      execution.threadId,
      JSON.stringify(execution),
    ]);
    return execution;
  },

  *completeToolExecution(
    input: CompleteToolExecutionInput,
    resultJson: string,
    clock: Clock,
  ): SqliteOperation<ToolExecution> {
    const existing = parseRecord<ToolExecution>(
      yield* statements.selectToolExecution([input.runId, input.toolCallId]),
    );
    if (!existing) {
      throw new LunationError(
        'not-found',
        `Tool call "${input.toolCallId}" of run "${input.runId}" was never begun; call beginToolExecution first`,
        { details: { runId: input.runId, toolCallId: input.toolCallId } },
      );
    }
    yield* assertFreshLease(existing.threadId, input.leaseToken);
    if (existing.status === 'completed') return existing;
    const execution: ToolExecution = {
      ...existing,
      status: 'completed',
      result: JSON.parse(resultJson),
      completedAt: clock.now(),
    };
    yield* statements.upsertToolExecution([
      execution.runId,
      execution.toolCallId,
      execution.threadId,
      JSON.stringify(execution),
    ]);
    return execution;
  },

  /** The start of a transactional effect: the write lock, then the entry, which must exist, and the lease. */
  *startToolEffect(input: ToolEffectInput): SqliteOperation<ToolExecution> {
    yield* statements.touchToolExecution([input.runId, input.toolCallId]);
    const existing = parseRecord<ToolExecution>(
      yield* statements.selectToolExecution([input.runId, input.toolCallId]),
    );
    if (!existing) {
      throw new LunationError(
        'not-found',
        `Tool call "${input.toolCallId}" of run "${input.runId}" was never begun; call beginToolExecution first`,
        { details: { runId: input.runId, toolCallId: input.toolCallId } },
      );
    }
    yield* assertFreshLease(existing.threadId, input.leaseToken);
    return existing;
  },

  *getToolExecution(runId: string, toolCallId: string): SqliteOperation<ToolExecution | undefined> {
    return parseRecord<ToolExecution>(yield* statements.selectToolExecution([runId, toolCallId]));
  },

  *listToolExecutions(runId: string): SqliteOperation<ToolExecution[]> {
    const rows = yield* statements.listToolExecutions([runId]);
    return rows.map((row) => JSON.parse(row.record) as ToolExecution);
  },

  *acquireLease(input: AcquireLeaseInput, clock: Clock): SqliteOperation<Lease> {
    const now = clock.now();
    const current = yield* statements.selectLease([input.threadId]);
    if (
      current &&
      current.expiresAt !== null &&
      current.expiresAt > now &&
      !mayTakeOver(current, input, now)
    ) {
      throw threadBusy(input.threadId, toLease(input.threadId, current));
    }
    const lease: Lease = {
      threadId: input.threadId,
      owner: input.owner,
      ...(input.incarnation === undefined ? {} : { incarnation: input.incarnation }),
      runId: input.runId,
      token: (current?.token ?? 0) + 1,
      renewedAt: now,
      expiresAt: now + input.ttlMs,
    };
    yield* statements.upsertLease([
      lease.threadId,
      lease.token,
      lease.owner,
      input.incarnation ?? null,
      lease.runId,
      now,
      lease.expiresAt,
    ]);
    return lease;
  },

  *renewLease(input: RenewLeaseInput, clock: Clock): SqliteOperation<Lease> {
    const now = clock.now();
    const row = yield* statements.renewLease([now, now + input.ttlMs, input.threadId, input.token]);
    if (!row) {
      const current = yield* statements.selectLeaseToken([input.threadId]);
      throw new LunationError(
        'lease-lost',
        `Lease token ${input.token} no longer holds thread "${input.threadId}"${current && current.token !== input.token ? ` (token ${current.token} was issued since)` : ''}; stop the run, another process may own the thread`,
        { details: { threadId: input.threadId, token: input.token, currentToken: current?.token } },
      );
    }
    return toLease(input.threadId, row);
  },

  *releaseLease(input: ReleaseLeaseInput): SqliteOperation<boolean> {
    return (yield* statements.endLease([input.threadId, input.token])).changes > 0;
  },

  *getLease(threadId: string, clock: Clock): SqliteOperation<Lease | undefined> {
    const row = yield* statements.selectLease([threadId]);
    return row && row.expiresAt !== null && row.expiresAt > clock.now() ? toLease(threadId, row) : undefined;
  },
};

/**
 * The atomic operations of `SqliteStore` in one SQLite file (kysely migrations; better-sqlite3 prepared
 * statements, or an injected Kysely instance); `CheckedStore` checks their input and the closed state first.
 */
export class SqliteBackend implements StoreBackend {
  readonly kind = 'sqlite';
  readonly #options: SqliteStoreOptions;
  readonly #ownsClient: boolean;
  readonly #clock: Clock;
  #client: SqliteClient | undefined;
  #kysely: Kysely<unknown> | undefined;
  #runner: OperationRunner | undefined;
  #initializing: Promise<OperationRunner> | undefined;
  #checkpointer: BackgroundCheckpointer | undefined;
  #closed = false;
  /** Set while a tool effect's transaction is open on the shared connection: other operations wait for it. */
  #effect: Promise<void> | undefined;

  constructor(options: SqliteStoreOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    if ('database' in options) {
      if (typeof options.database?.connection !== 'function' || options.database.isTransaction) {
        throw new LunationError(
          'invalid-argument',
          'database must be a Kysely instance (not a transaction), e.g. new Kysely({ dialect: new SqliteDialect({ database }) })',
        );
      }
      this.#ownsClient = false;
    } else if ('client' in options) {
      this.#client = options.client;
      this.#ownsClient = false;
    } else {
      assertId(options.path, 'path');
      if (options.busyTimeoutMs !== undefined) assertInteger(options.busyTimeoutMs, 'busyTimeoutMs', 0);
      if (
        options.checkpoint !== undefined &&
        options.checkpoint !== 'background' &&
        options.checkpoint !== 'inline'
      ) {
        throw new LunationError(
          'invalid-argument',
          `checkpoint must be 'background' or 'inline', got ${String(options.checkpoint)}`,
        );
      }
      this.#ownsClient = true;
    }
  }

  /** Opens the database and applies pending migrations; idempotent, and done lazily by every method. */
  async init(): Promise<void> {
    await this.#ready();
  }

  /** The name of the newest migration applied to the database, e.g. `002_message_run_id`. */
  async schemaVersion(): Promise<string | undefined> {
    await this.#ready();
    const migrations = await createMigrator(this.#kysely!).getMigrations();
    return migrations.filter((migration) => migration.executedAt !== undefined).at(-1)?.name;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#runner = undefined;
    const checkpointer = this.#checkpointer;
    this.#checkpointer = undefined;
    // The checkpointer's connection closes first, so the store's own close (the last connection) checkpoints
    // the rest of the log and removes it.
    await checkpointer?.stop();
    if (this.#ownsClient) this.#client?.close();
    this.#client = undefined;
    this.#kysely = undefined;
  }

  createThread(input: CreateThreadInput): Promise<ThreadRecord> {
    const metadataJson = toJsonText(input.metadata ?? {}, 'metadata');
    return this.#run('none', operations.createThread(input, metadataJson, this.#clock));
  }

  getThread(threadId: string): Promise<ThreadRecord | undefined> {
    return this.#run('none', operations.getThread(threadId));
  }

  listThreads({ resourceId, limit, cursor }: CheckedListThreadsOptions): Promise<Page<ThreadRecord>> {
    const [createdAt, id] = cursor === undefined ? [-1, ''] : decodeCursor(cursor, 'string');
    return this.#run('none', operations.listThreads(resourceId, createdAt, id, limit));
  }

  updateThreadMetadata(threadId: string, metadata: Record<string, unknown>): Promise<ThreadRecord> {
    const metadataJson = toJsonText(metadata, 'metadata');
    return this.#run('none', operations.updateThreadMetadata(threadId, metadataJson, this.#clock));
  }

  deleteThread(threadId: string): Promise<boolean> {
    return this.#run('write', operations.deleteThread(threadId));
  }

  listMessages(
    threadId: string,
    { fromSeq, toSeq, limit }: CheckedListMessagesOptions,
  ): Promise<MessageRecord[]> {
    return this.#run(
      'none',
      operations.listMessages(threadId, fromSeq, toSeq ?? Number.MAX_SAFE_INTEGER, limit ?? -1),
    );
  }

  getRun(runId: string): Promise<RunRecord | undefined> {
    return this.#run('none', operations.getRun(runId));
  }

  getLatestRun(threadId: string): Promise<RunRecord | undefined> {
    return this.#run('none', operations.getLatestRun(threadId));
  }

  listRuns(threadId: string, { limit, cursor }: CheckedListRunsOptions): Promise<Page<RunRecord>> {
    const [createdAt, seq] = cursor === undefined ? [-1, 0] : decodeCursor(cursor, 'number');
    return this.#run('none', operations.listRuns(threadId, createdAt, seq, limit));
  }

  getThreadState(threadId: string): Promise<Record<string, unknown>> {
    return this.#run('none', readThreadState(threadId));
  }

  commit(commit: CheckpointCommit): Promise<CheckpointResult> {
    const { threadId, run, threadState } = commit;
    const messages = commit.messages.map((message, index) => toJsonText(message, `messages[${index}]`));
    const runJson = run === undefined ? undefined : toJsonText(run, 'run');
    const stateJson = threadState === undefined ? undefined : toJsonText(threadState, 'threadState');
    const toolExecutions = (commit.toolExecutions ?? []).map((execution) => [
      execution.runId,
      execution.toolCallId,
      threadId,
      toJsonText(execution, 'toolExecutions'),
    ]);
    return this.#run(
      'write',
      operations.commit({ commit, messages, runJson, stateJson, toolExecutions, clock: this.#clock }),
    );
  }

  loadCheckpoint(threadId: string): Promise<ThreadCheckpoint | undefined> {
    return this.#run('read', operations.loadCheckpoint(threadId));
  }

  beginToolExecution(input: BeginToolExecutionInput): Promise<ToolExecution> {
    return this.#run('write', operations.beginToolExecution(input, this.#clock));
  }

  completeToolExecution(input: CompleteToolExecutionInput): Promise<ToolExecution> {
    const resultJson = toJsonText(input.result, 'result');
    return this.#run('write', operations.completeToolExecution(input, resultJson, this.#clock));
  }

  /** `SqliteStore.completeToolExecutionWithEffect` once its input is checked. */
  async completeToolExecutionWithEffect(
    input: ToolEffectInput,
    effect: (transaction: unknown) => Promise<ToolResult>,
  ): Promise<ToolExecution> {
    const { signal } = input;
    await this.#ready();
    while (this.#effect) await this.#effect;
    let done = () => {};
    this.#effect = new Promise<void>((resolve) => {
      done = resolve;
    });
    let failure: { error: unknown } | undefined;
    try {
      return await (this.#kysely as Kysely<unknown>).transaction().execute(async (transaction) => {
        const raw = transaction.withoutPlugins();
        const existing = await drive(raw, operations.startToolEffect(input));
        if (existing.status === 'completed') return existing;
        let result: ToolResult;
        try {
          result = await runEffectUntilAborted(() => effect(effectTransaction(transaction, signal)), signal);
        } catch (error) {
          failure = { error };
          throw error;
        }
        assertObject(result, 'result');
        const resultJson = toJsonText(result, 'result');
        return drive(raw, operations.completeToolExecution({ ...input, result }, resultJson, this.#clock));
      });
    } catch (error) {
      if (failure) throw failure.error;
      throw toStoreError(error);
    } finally {
      this.#effect = undefined;
      done();
    }
  }

  getToolExecution(runId: string, toolCallId: string): Promise<ToolExecution | undefined> {
    return this.#run('none', operations.getToolExecution(runId, toolCallId));
  }

  listToolExecutions(runId: string): Promise<ToolExecution[]> {
    return this.#run('none', operations.listToolExecutions(runId));
  }

  acquireLease(input: AcquireLeaseInput): Promise<Lease> {
    return this.#run('write', operations.acquireLease(input, this.#clock));
  }

  renewLease(input: RenewLeaseInput): Promise<Lease> {
    return this.#run('none', operations.renewLease(input, this.#clock));
  }

  releaseLease(input: ReleaseLeaseInput): Promise<boolean> {
    return this.#run('none', operations.releaseLease(input));
  }

  getLease(threadId: string): Promise<Lease | undefined> {
    return this.#run('none', operations.getLease(threadId, this.#clock));
  }

  toStoreError(error: unknown): LunationError {
    return toStoreError(error);
  }

  /**
   * Runs `operation` once the schema is ready (`CheckedStore` maps its driver errors). A `write` operation is
   * one `BEGIN IMMEDIATE` transaction: the write lock is taken up front, so a racing writer waits (busy
   * timeout) instead of failing to upgrade a read.
   */
  async #run<T>(transaction: Transaction, operation: SqliteOperation<T>): Promise<T> {
    const runner = this.#runner ?? (await this.#ready());
    while (this.#effect) await this.#effect;
    return runner.execute(transaction, operation);
  }

  #ready(): Promise<OperationRunner> {
    if (this.#closed) {
      return Promise.reject(
        new LunationError(
          'store-unavailable',
          'SqliteStore is closed; create a new store to keep using the database',
          {
            retryable: false,
          },
        ),
      );
    }
    if (this.#runner) return Promise.resolve(this.#runner);
    this.#initializing ??= this.#initialize().catch((error: unknown) => {
      this.#initializing = undefined;
      throw toStoreError(error);
    });
    return this.#initializing;
  }

  async #initialize(): Promise<OperationRunner> {
    if (!('database' in this.#options)) this.#client ??= this.#openClient();
    const kysely = this.#client
      ? createKysely(this.#client)
      : (this.#options as SqliteStoreKyselyOptions).database;
    const file = await databaseFile(kysely);
    await migrate(kysely, file);
    if (this.#closed) throw new LunationError('store-unavailable', 'SqliteStore was closed while opening');
    if (
      this.#ownsClient &&
      file !== '' &&
      (this.#options as SqliteStorePathOptions).checkpoint !== 'inline'
    ) {
      this.#startCheckpointer(file);
    }
    this.#kysely = kysely;
    this.#runner = this.#client
      ? new SyncRunner(this.#client, Object.values(statements))
      : new KyselyRunner(kysely);
    return this.#runner;
  }

  /**
   * Hands checkpoints to a worker thread. The connection's own automatic checkpoint stays as a fallback at a
   * larger log size: under constant writes a passive checkpoint never catches up with the end of the log, and
   * only a checkpoint that does lets the log restart from its beginning.
   */
  #startCheckpointer(file: string): void {
    const client = this.#client as Database.Database;
    client.pragma(`wal_autocheckpoint = ${fallbackCheckpointPages}`);
    client.pragma(`journal_size_limit = ${journalSizeLimitBytes}`);
    this.#checkpointer = new BackgroundCheckpointer({
      file,
      synchronous: (this.#options as SqliteStorePathOptions).synchronous === 'full' ? 'FULL' : 'NORMAL',
      intervalMs: checkpointIntervalMs,
      idleIntervalMs: idleCheckpointIntervalMs,
      onFailure: () => {
        // Back to SQLite's own checkpoints inside commits: slower, equally durable.
        if (this.#client === client && client.open)
          client.pragma(`wal_autocheckpoint = ${inlineCheckpointPages}`);
        this.#checkpointer = undefined;
      },
    });
  }

  #openClient(): SqliteClient {
    const options = this.#options as SqliteStorePathOptions;
    const driver = driverVersion();
    const problem = driver === undefined ? undefined : driverProblem(driver, process.version);
    if (problem) throw new LunationError('store-unavailable', problem, { retryable: false });
    let client: Database.Database | undefined;
    try {
      client = new Database(options.path);
      const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
      client.pragma(`busy_timeout = ${busyTimeoutMs}`);
      enableWal(client, busyTimeoutMs);
      client.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      client.pragma('foreign_keys = ON');
      return client;
    } catch (error) {
      client?.close();
      const driverProblem = nativeModuleError(error);
      if (driverProblem) throw driverProblem;
      throw new LunationError(
        'store-unavailable',
        `Cannot open SQLite database "${options.path}": ${error instanceof Error ? error.message : String(error)}; check that the directory exists and is writable`,
        { cause: error, retryable: false },
      );
    }
  }
}

/**
 * Switches the file to WAL. The switch needs an exclusive lock and SQLite does not wait on the busy timeout
 * for it, so two processes opening a new file at once can see SQLITE_BUSY: retry until the timeout.
 */
function enableWal(client: Database.Database, timeoutMs: number): void {
  if (String(client.pragma('journal_mode', { simple: true })).toLowerCase() === 'wal') return;
  const deadline = Date.now() + timeoutMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      client.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw error;
      Atomics.wait(pause, 0, 0, 5);
    }
  }
}

/** SQLite's default: a commit that brings the log past this many pages checkpoints it. */
const inlineCheckpointPages = 1000;
const fallbackCheckpointPages = 10_000;
const checkpointIntervalMs = 10;
const idleCheckpointIntervalMs = 320;
const journalSizeLimitBytes = 64 * 1024 * 1024;

/** The file of `db`'s main database ('' in memory), which keys the in-process migration queue. */
async function databaseFile(db: Kysely<unknown>): Promise<string> {
  let rows: { name: string; file: string }[];
  try {
    ({ rows } = await db
      .withoutPlugins()
      .executeQuery<{ name: string; file: string }>(CompiledQuery.raw('PRAGMA database_list')));
  } catch (error) {
    throw new LunationError(
      'store-unavailable',
      `Cannot read the SQLite database list (${error instanceof Error ? error.message : String(error)}); pass a Kysely instance built on SqliteDialect`,
      { cause: error, retryable: false },
    );
  }
  return rows.find((database) => database.name === 'main')?.file ?? '';
}

function toThread(row: ThreadRow): ThreadRecord {
  const thread: ThreadRecord = {
    id: row.id,
    metadata: JSON.parse(row.metadata),
    messageCount: row.messageCount,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
  if (row.resourceId !== null) thread.resourceId = row.resourceId;
  return thread;
}

function toMessage(threadId: string, row: MessageRow): MessageRecord {
  const record: MessageRecord = {
    threadId,
    seq: row.seq,
    message: JSON.parse(row.message),
    createdAt: row.createdAt,
  };
  if (row.runId !== null) record.runId = row.runId;
  return record;
}

function toLease(threadId: string, row: LeaseRow): Lease {
  const lease: Lease = {
    threadId,
    owner: row.owner,
    runId: row.runId,
    token: row.token,
    renewedAt: row.renewedAt,
    expiresAt: row.expiresAt!,
  };
  if (row.incarnation !== null) lease.incarnation = row.incarnation;
  return lease;
}

/** Whether `input` may take over the unexpired lease `held` (the contract's two takeovers). */
function mayTakeOver(held: LeaseRow, input: AcquireLeaseInput, now: number): boolean {
  if (held.owner !== input.owner || held.incarnation === null || input.incarnation === undefined)
    return false;
  return (
    held.incarnation === input.incarnation ||
    4 * (now - held.renewedAt) >= 3 * (held.expiresAt! - held.renewedAt)
  );
}

function toPage<T>(rows: T[], limit: number, cursorOf: (last: T) => string): Page<T> {
  if (rows.length <= limit) return { items: rows };
  const items = rows.slice(0, limit);
  return { items, nextCursor: cursorOf(items[items.length - 1]!) };
}

function parseRecord<T>(row: RecordRow | undefined): T | undefined {
  return row === undefined ? undefined : (JSON.parse(row.record) as T);
}

function* readThreadState(threadId: string): SqliteOperation<Record<string, unknown>> {
  const row = yield* statements.selectThreadState([threadId]);
  return row?.state ? JSON.parse(row.state) : {};
}

/** Why a commit must not be written, checked in the contract's order: thread, lease token, message count. */
function commitRejection(
  commit: CheckpointCommit,
  head: CommitHead | undefined,
  now: number,
): LunationError | undefined {
  const { threadId, expectedMessageCount, leaseToken } = commit;
  if (!head) return threadNotFound(threadId);
  const latest = head.leaseToken ?? 0;
  if (leaseToken === undefined) {
    if (head.leaseExpiresAt !== null && head.leaseExpiresAt > now) {
      return leaseHeldElsewhere(threadId, { expiresAt: head.leaseExpiresAt });
    }
  } else if (leaseToken < latest) {
    return staleLease(threadId, leaseToken, latest);
  } else if (leaseToken > latest) {
    return unissuedLeaseToken(threadId, leaseToken, latest);
  }
  if (head.messageCount === expectedMessageCount) return undefined;
  return new LunationError(
    'store-conflict',
    `Thread "${threadId}" has ${head.messageCount} messages but the commit expected ${expectedMessageCount}; another writer committed first, reload the checkpoint and retry`,
    { details: { threadId, expectedMessageCount, messageCount: head.messageCount } },
  );
}

function* assertFreshLease(threadId: string, token: number | undefined): SqliteOperation<void> {
  if (token === undefined) return;
  const row = yield* statements.selectLeaseToken([threadId]);
  if (row && token < row.token) throw staleLease(threadId, token, row.token);
}

function threadNotFound(threadId: string): LunationError {
  return new LunationError(
    'not-found',
    `Thread "${threadId}" does not exist; create it with createThread first`,
    {
      details: { threadId },
    },
  );
}

function staleLease(threadId: string, token: number, currentToken: number): LunationError {
  return new LunationError(
    'stale-lease',
    `Lease token ${token} of thread "${threadId}" is stale (token ${currentToken} was issued since); nothing was written, stop this run`,
    { details: { threadId, token, currentToken } },
  );
}

function threadBusy(threadId: string, held: Lease): LunationError {
  const { runId, owner, incarnation, renewedAt, expiresAt } = held;
  return new LunationError(
    'thread-busy',
    `Thread "${threadId}" already has an active run (run ${runId}); wait for it or cancel it`,
    { details: { threadId, runId, owner, incarnation, renewedAt, expiresAt } },
  );
}

function invalidCommit(problem: string): LunationError {
  return new LunationError('invalid-argument', `Invalid commit: ${problem}`);
}

/**
 * The transaction as a tool's effect sees it: once `signal` aborts (the caller gave up on the call), every
 * statement built on it fails with the signal's reason instead of running.
 */
function effectTransaction(
  transaction: KyselyTransaction<unknown>,
  signal: AbortSignal | undefined,
): KyselyTransaction<unknown> {
  if (signal === undefined) return transaction;
  return transaction.withPlugin({
    transformQuery: ({ node }) => {
      signal.throwIfAborted();
      return node;
    },
    transformResult: async ({ result }) => result,
  });
}
