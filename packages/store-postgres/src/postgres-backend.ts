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
import { postgresErrorCode } from '@lunation/contract/postgres-utils';
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
  ledgerEntriesToWrite,
  runEffectUntilAborted,
  type StoreBackend,
  toJsonText,
  unissuedLeaseToken,
} from '@lunation/contract/store-utils';
import { CompiledQuery, Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import { CallBatcher, type Executor } from './call-batcher.js';
import { migrate, schemaVersion } from './postgres-migrations.js';
import { assertSchemaName, defaultSchema } from './postgres-schema.js';
import { createStatements, type Statement, type Statements } from './postgres-statements.js';
import type {
  PostgresPool,
  PostgresQueryConfig,
  PostgresStoreConnectionOptions,
  PostgresStoreOptions,
} from './postgres-store-options.js';
import { toStoreError } from './to-store-error.js';

/** Maps a rejection the store's SQL raised (an `LN...` SQLSTATE, with its DETAIL) to the contract's error. */
type Rejection = (state: string, detail: string) => LunationError | undefined;

interface ThreadJson {
  id: string;
  resourceId: string | null;
  metadata: ThreadRecord['metadata'];
  messageCount: number;
  createdAt: number;
  updatedAt: number;
}

interface MessageJson {
  seq: number;
  message: MessageRecord['message'];
  runId: string | null;
  createdAt: number;
}

interface ToolExecutionRow {
  run_id: string;
  tool_call_id: string;
  thread_id: string;
  tool_name: string;
  idempotency_key: string;
  status: ToolExecution['status'];
  attempts: number;
  result: ToolResult | null;
  started_at: number;
  completed_at: number | null;
}

interface LeaseRow {
  thread_id: string;
  token: number;
  owner: string;
  incarnation: string | null;
  run_id: string;
  renewed_at: number;
  expires_at: number;
}

/**
 * The atomic operations of `PostgresStore`: every call is one statement, so one round trip; writes call SQL
 * functions the migrations install, each atomic. `CheckedStore` checks their input and the closed state first.
 */
export class PostgresBackend implements StoreBackend {
  readonly kind = 'postgres';
  /** The PostgreSQL schema of the store's tables. */
  readonly schema: string;
  readonly #options: PostgresStoreOptions;
  readonly #statements: Statements;
  readonly #clock: Clock;
  #pool: PostgresPool | undefined;
  #ownedPool: pg.Pool | undefined;
  #kysely: Kysely<unknown> | undefined;
  #executor: Executor | undefined;
  /** Set once the schema is migrated. */
  #execute: Executor | undefined;
  #initializing: Promise<Executor> | undefined;
  #lastPoolError: unknown;
  #closed = false;

  constructor(options: PostgresStoreOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    const schema = options.schema ?? defaultSchema;
    assertSchemaName(schema);
    this.schema = schema;
    this.#statements = createStatements(schema);
    if ('database' in options) {
      if (typeof options.database?.connection !== 'function' || options.database.isTransaction) {
        throw invalid(
          'database must be a Kysely instance (not a transaction), e.g. new Kysely({ dialect: new PostgresDialect({ pool }) })',
        );
      }
    } else if ('pool' in options) {
      if (typeof options.pool?.connect !== 'function') {
        throw invalid('pool must be a pg Pool, e.g. new pg.Pool({ connectionString })');
      }
      this.#pool = options.pool;
    } else {
      assertId(options.connectionString, 'connectionString');
      if (options.maxConnections !== undefined) assertInteger(options.maxConnections, 'maxConnections', 1);
    }
    if (
      options.callBatching !== undefined &&
      !(['auto', 'always', 'off'] as unknown[]).includes(options.callBatching)
    ) {
      throw invalid(
        `callBatching must be 'auto', 'always' or 'off', not ${JSON.stringify(options.callBatching)}`,
      );
    }
  }

  /** Connects and applies pending migrations; idempotent, and done lazily by every method. */
  async init(): Promise<void> {
    await this.#ready();
  }

  /** The name of the newest migration applied to the schema, e.g. `002_store_functions`. */
  async schemaVersion(): Promise<string | undefined> {
    await this.#ready();
    try {
      return await schemaVersion(this.#kysely!, this.schema);
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /** Drops the store's schema with everything in it; `PostgresStore.dropSchema` closes the store after it. */
  async dropSchema(): Promise<void> {
    try {
      await this.#connection().execute(this.#statements.dropSchema, []);
    } catch (error) {
      throw toStoreError(error, this.#lastPoolError);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#execute = undefined;
    const pool = this.#ownedPool;
    this.#ownedPool = undefined;
    // A store still opening finishes (or fails) first, so its pool is not ended under its migration.
    await this.#initializing?.catch(() => undefined);
    await pool?.end();
  }

  async createThread(input: CreateThreadInput): Promise<ThreadRecord> {
    const metadataJson = toJsonText(input.metadata ?? {}, 'metadata');
    const now = this.#clock.now();
    const rows = await this.#query(this.#statements.createThread, [
      input.id,
      input.resourceId ?? null,
      metadataJson,
      now,
    ]);
    if (rows.length === 0) {
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
  }

  async getThread(threadId: string): Promise<ThreadRecord | undefined> {
    const [row] = await this.#query(this.#statements.getThread, [threadId]);
    return row === undefined ? undefined : toThread(JSON.parse(row));
  }

  async listThreads(options: CheckedListThreadsOptions): Promise<Page<ThreadRecord>> {
    const { limit } = options;
    const [createdAt, id] = options.cursor === undefined ? [-1, ''] : decodeCursor(options.cursor, 'string');
    const rows =
      options.resourceId === undefined
        ? await this.#query(this.#statements.listThreads, [createdAt, id, limit + 1])
        : await this.#query(this.#statements.listThreadsOfResource, [
            options.resourceId,
            createdAt,
            id,
            limit + 1,
          ]);
    const threads = rows.map((row) => toThread(JSON.parse(row)));
    return toPage(threads, limit, (thread) => encodeCursor([thread.createdAt, thread.id]));
  }

  async updateThreadMetadata(threadId: string, metadata: Record<string, unknown>): Promise<ThreadRecord> {
    const metadataJson = toJsonText(metadata, 'metadata');
    const [row] = await this.#query(this.#statements.updateThreadMetadata, [
      threadId,
      metadataJson,
      this.#clock.now(),
    ]);
    if (row === undefined) throw threadNotFound(threadId);
    return toThread(JSON.parse(row));
  }

  async deleteThread(threadId: string): Promise<boolean> {
    const [row] = await this.#query(this.#statements.deleteThread, [threadId]);
    return row === 'true';
  }

  async listMessages(threadId: string, options: CheckedListMessagesOptions): Promise<MessageRecord[]> {
    const { fromSeq } = options;
    const rows = await this.#query(this.#statements.listMessages, [
      threadId,
      fromSeq,
      options.toSeq ?? Number.MAX_SAFE_INTEGER,
      options.limit ?? null,
    ]);
    return rows.map((row) => toMessage(threadId, JSON.parse(row)));
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const [row] = await this.#query(this.#statements.getRun, [runId]);
    return row === undefined ? undefined : (JSON.parse(row) as RunRecord);
  }

  async getLatestRun(threadId: string): Promise<RunRecord | undefined> {
    const [row] = await this.#query(this.#statements.getLatestRun, [threadId]);
    return row === undefined ? undefined : (JSON.parse(row) as RunRecord);
  }

  async listRuns(threadId: string, options: CheckedListRunsOptions): Promise<Page<RunRecord>> {
    const { limit } = options;
    const [createdAt, seq] = options.cursor === undefined ? [-1, 0] : decodeCursor(options.cursor, 'number');
    const rows = await this.#query(this.#statements.listRuns, [threadId, createdAt, seq, limit + 1]);
    const page = toPage(
      rows.map((row) => JSON.parse(row) as { record: RunRecord; createdAt: number; seq: number }),
      limit,
      (run) => encodeCursor([run.createdAt, run.seq]),
    );
    return {
      items: page.items.map((run) => run.record),
      ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
    };
  }

  async getThreadState(threadId: string): Promise<Record<string, unknown>> {
    const [row] = await this.#query(this.#statements.getThreadState, [threadId]);
    return row === undefined ? {} : JSON.parse(row);
  }

  async commit(commit: CheckpointCommit): Promise<CheckpointResult> {
    const { threadId, expectedMessageCount, leaseToken, run, threadState } = commit;
    const messagesJson = `[${commit.messages.map((message, index) => toJsonText(message, `messages[${index}]`)).join(',')}]`;
    const executions = ledgerEntriesToWrite(commit.toolExecutions ?? []);
    const [row] = await this.#query(
      this.#statements.commit,
      [
        threadId,
        expectedMessageCount,
        leaseToken ?? null,
        this.#clock.now(),
        messagesJson,
        run?.identity.runId ?? null,
        run === undefined ? null : toJsonText(run, 'run'),
        run?.createdAt ?? null,
        threadState === undefined ? null : toJsonText(threadState, 'threadState'),
        executions.length === 0 ? null : toJsonText(executions, 'toolExecutions'),
        commit.runId ?? null,
      ],
      (state, detail) => {
        switch (state) {
          case 'LN404':
            return threadNotFound(threadId);
          case 'LN410':
            return staleLease(threadId, leaseToken!, Number(detail));
          case 'LN411':
            return unissuedLeaseToken(threadId, leaseToken!, Number(detail));
          case 'LN423':
            return leaseHeldElsewhere(threadId, JSON.parse(detail) as Record<string, unknown>);
          case 'LN409': {
            const messageCount = Number(detail);
            return new LunationError(
              'store-conflict',
              `Thread "${threadId}" has ${messageCount} messages but the commit expected ${expectedMessageCount}; another writer committed first, reload the checkpoint and retry`,
              { details: { threadId, expectedMessageCount, messageCount } },
            );
          }
          case 'LN400':
            return invalidCommit(threadId, detail);
          default:
            return undefined;
        }
      },
    );
    return { messageCount: Number(row) };
  }

  async loadCheckpoint(threadId: string): Promise<ThreadCheckpoint | undefined> {
    const [row] = await this.#query(this.#statements.loadCheckpoint, [threadId]);
    if (row === undefined) return undefined;
    const checkpoint = JSON.parse(row) as {
      thread: ThreadJson;
      threadState: Record<string, unknown> | null;
      messages: MessageJson[];
      latestRun: RunRecord | null;
    };
    return {
      thread: toThread(checkpoint.thread),
      messages: checkpoint.messages.map((message) => toMessage(threadId, message)),
      threadState: checkpoint.threadState ?? {},
      latestRun: checkpoint.latestRun ?? undefined,
    };
  }

  async beginToolExecution(input: BeginToolExecutionInput): Promise<ToolExecution> {
    const [row] = await this.#query(
      this.#statements.beginToolExecution,
      [
        input.runId,
        input.toolCallId,
        input.threadId,
        input.toolName,
        input.idempotencyKey,
        input.leaseToken ?? null,
        this.#clock.now(),
      ],
      (state, detail) => {
        if (state === 'LN410') return staleLease(input.threadId, input.leaseToken!, Number(detail));
        if (state === 'LN400') {
          const { threadId } = JSON.parse(detail) as { threadId: string };
          return invalid(
            `Tool call "${input.toolCallId}" of run "${input.runId}" belongs to thread "${threadId}", not "${input.threadId}"; a ledger entry never changes thread`,
            { runId: input.runId, toolCallId: input.toolCallId, threadId },
          );
        }
        return undefined;
      },
    );
    return toToolExecution(JSON.parse(row!));
  }

  async completeToolExecution(input: CompleteToolExecutionInput): Promise<ToolExecution> {
    const [row] = await this.#query(
      this.#statements.completeToolExecution,
      completionValues(input, this.#clock.now()),
      completionRejection(input),
    );
    return toToolExecution(JSON.parse(row!));
  }

  /**
   * Runs `effect` with a kysely `Transaction` on this database and commits what it wrote together with the
   * call's ledger completion (see `TransactionalToolEffects`). The ledger row stays locked (`FOR UPDATE`)
   * until the transaction ends; the transaction is one connection of the pool.
   */
  async completeToolExecutionWithEffect(
    input: ToolEffectInput,
    effect: (transaction: unknown) => Promise<ToolResult>,
  ): Promise<ToolExecution> {
    const { signal } = input;
    await this.#ready();
    const statements = this.#statements;
    let failure: { error: unknown } | undefined;
    const rows = async (transaction: Kysely<unknown>, statement: Statement, values: unknown[]) => {
      const result = await transaction.executeQuery<{ j: string }>(CompiledQuery.raw(statement.text, values));
      return result.rows.map((row) => row.j);
    };
    try {
      return await (this.#kysely as Kysely<unknown>).transaction().execute(async (transaction) => {
        const [locked] = await rows(transaction, statements.lockToolExecution, [
          input.runId,
          input.toolCallId,
        ]);
        if (locked === undefined) {
          throw new LunationError(
            'not-found',
            `Tool call "${input.toolCallId}" of run "${input.runId}" was never begun; call beginToolExecution first`,
            { details: { runId: input.runId, toolCallId: input.toolCallId } },
          );
        }
        const existing = toToolExecution(JSON.parse(locked));
        if (existing.status === 'completed') return existing;
        let result: ToolResult;
        try {
          result = await runEffectUntilAborted(() => effect(effectTransaction(transaction, signal)), signal);
        } catch (error) {
          failure = { error };
          throw error;
        }
        assertObject(result, 'result');
        const completion = { ...input, result };
        const [row] = await rows(
          transaction,
          statements.completeToolExecution,
          completionValues(completion, this.#clock.now()),
        );
        return toToolExecution(JSON.parse(row!));
      });
    } catch (error) {
      if (failure) throw failure.error;
      if (LunationError.isInstance(error)) throw error;
      const state = postgresErrorCode(error);
      if (state?.startsWith('LN')) {
        const rejection = completionRejection({ ...input, result: { status: 'success' } })(
          state,
          (error as { detail?: string }).detail ?? '',
        );
        if (rejection) throw rejection;
      }
      if (this.#closed) throw closedError();
      throw toStoreError(error, this.#lastPoolError);
    }
  }

  async getToolExecution(runId: string, toolCallId: string): Promise<ToolExecution | undefined> {
    const [row] = await this.#query(this.#statements.getToolExecution, [runId, toolCallId]);
    return row === undefined ? undefined : toToolExecution(JSON.parse(row));
  }

  async listToolExecutions(runId: string): Promise<ToolExecution[]> {
    const rows = await this.#query(this.#statements.listToolExecutions, [runId]);
    return rows.map((row) => toToolExecution(JSON.parse(row)));
  }

  async acquireLease(input: AcquireLeaseInput): Promise<Lease> {
    const [row] = await this.#query(
      this.#statements.acquireLease,
      [input.threadId, input.owner, input.incarnation ?? null, input.runId, input.ttlMs],
      (state, detail) => {
        if (state !== 'LN423') return undefined;
        const held = JSON.parse(detail) as {
          owner: string;
          incarnation: string | null;
          runId: string;
          renewedAt: number;
          expiresAt: number;
        };
        const { runId } = held;
        return new LunationError(
          'thread-busy',
          `Thread "${input.threadId}" already has an active run (run ${runId}); wait for it or cancel it`,
          {
            details: {
              threadId: input.threadId,
              runId,
              owner: held.owner,
              incarnation: held.incarnation ?? undefined,
              renewedAt: held.renewedAt,
              expiresAt: held.expiresAt,
            },
          },
        );
      },
    );
    return toLease(JSON.parse(row!));
  }

  async renewLease(input: RenewLeaseInput): Promise<Lease> {
    const [row] = await this.#query(this.#statements.renewLease, [input.threadId, input.token, input.ttlMs]);
    const { lease, currentToken } = JSON.parse(row!) as {
      lease: LeaseRow | null;
      currentToken: number | null;
    };
    if (lease === null) {
      const current = currentToken ?? undefined;
      throw new LunationError(
        'lease-lost',
        `Lease token ${input.token} no longer holds thread "${input.threadId}"${current !== undefined && current !== input.token ? ` (token ${current} was issued since)` : ''}; stop the run, another process may own the thread`,
        { details: { threadId: input.threadId, token: input.token, currentToken: current } },
      );
    }
    return toLease(lease);
  }

  async releaseLease(input: ReleaseLeaseInput): Promise<boolean> {
    const rows = await this.#query(this.#statements.releaseLease, [input.threadId, input.token]);
    return rows.length > 0;
  }

  async getLease(threadId: string): Promise<Lease | undefined> {
    const [row] = await this.#query(this.#statements.getLease, [threadId]);
    return row === undefined ? undefined : toLease(JSON.parse(row));
  }

  /** Runs one statement once the schema is ready; errors become LunationErrors (`reject` maps the store's own). */
  async #query(statement: Statement, values: unknown[], reject?: Rejection): Promise<string[]> {
    const execute = this.#execute ?? (await this.#ready());
    try {
      return await execute(statement, values);
    } catch (error) {
      const state = postgresErrorCode(error);
      if (state?.startsWith('LN')) {
        const detail = (error as { detail?: string }).detail ?? '';
        const rejection = reject?.(state, detail);
        if (rejection) throw rejection;
      }
      throw error;
    }
  }

  toStoreError(error: unknown): LunationError {
    return toStoreError(error, this.#lastPoolError);
  }

  #ready(): Promise<Executor> {
    if (this.#closed) return Promise.reject(closedError());
    if (this.#execute) return Promise.resolve(this.#execute);
    this.#initializing ??= this.#initialize().catch((error: unknown) => {
      this.#initializing = undefined;
      throw toStoreError(error);
    });
    return this.#initializing;
  }

  async #initialize(): Promise<Executor> {
    const { kysely, execute } = this.#connection();
    await migrate(kysely, this.schema);
    if (this.#closed) throw closedError();
    this.#execute = execute;
    return execute;
  }

  /** The Kysely instance (for migrations) and the executor (for calls), made once without I/O. */
  #connection(): { kysely: Kysely<unknown>; execute: Executor } {
    if (this.#kysely && this.#executor) return { kysely: this.#kysely, execute: this.#executor };
    const options = this.#options;
    let single: Executor;
    let connections = 10;
    if ('database' in options) {
      this.#kysely = options.database.withoutPlugins();
      single = kyselyExecutor(this.#kysely);
    } else {
      const pool = this.#pool ?? this.#openPool(options as PostgresStoreConnectionOptions);
      // Never destroyed: that would end the pool (an owned pool is ended by close()).
      this.#kysely = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
      single = poolExecutor(pool);
      const max = (pool as { options?: { max?: unknown } }).options?.max;
      if (typeof max === 'number' && Number.isInteger(max) && max > 0) connections = max;
    }
    this.#executor = new CallBatcher(
      single,
      this.#statements.runBatch,
      options.callBatching ?? 'auto',
      connections,
    ).execute;
    return { kysely: this.#kysely, execute: this.#executor };
  }

  #openPool(options: PostgresStoreConnectionOptions): PostgresPool {
    const pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.maxConnections ?? 10,
      // A server that never answers fails the call (store-unavailable) instead of hanging it.
      connectionTimeoutMillis: connectTimeoutMs,
    });
    // An idle connection's error (the server restarted) must not crash the process; the next query reports it.
    pool.on('error', (error) => {
      this.#lastPoolError = error;
    });
    this.#ownedPool = pool;
    this.#pool = pool;
    return pool;
  }
}

/**
 * Runs each statement on a connection of the pool. Not `pool.query`: it ends the connection after any error,
 * and the store's rejections (a conflict, a busy thread) are errors the server raises on a healthy connection.
 */
/** How long the store's own pool waits for a new connection. */
const connectTimeoutMs = 10_000;

function poolExecutor(pool: PostgresPool): Executor {
  return async (statement, values) => {
    const config: PostgresQueryConfig = {
      name: statement.name,
      text: statement.text,
      values,
      rowMode: 'array',
    };
    const client = await pool.connect();
    let result: { rows: unknown[][] };
    try {
      result = await client.query(config);
    } catch (error) {
      // An error the server answered leaves the connection usable; anything else (a lost socket) ends it.
      client.release(isServerError(error) ? undefined : toError(error));
      throw error;
    }
    client.release();
    return presentValues(result.rows.map((row) => row[0]));
  };
}

/** The `j` values of the rows, a NULL (a function that found or wrote nothing) left out. */
function presentValues(values: unknown[]): string[] {
  return values.filter((value): value is string => value !== null && value !== undefined);
}

function isServerError(error: unknown): boolean {
  return typeof (error as { severity?: unknown } | undefined)?.severity === 'string';
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function kyselyExecutor(db: Kysely<unknown>): Executor {
  return async (statement, values) => {
    const result = await db.executeQuery<{ j: string | null }>(CompiledQuery.raw(statement.text, values));
    return presentValues(result.rows.map((row) => row.j));
  };
}

/** One entry per tool call, the last given winning (an upsert cannot touch a row twice in one statement). */
function toThread(json: ThreadJson): ThreadRecord {
  const thread: ThreadRecord = {
    id: json.id,
    metadata: json.metadata,
    messageCount: json.messageCount,
    createdAt: json.createdAt,
    updatedAt: json.updatedAt,
  };
  if (json.resourceId !== null) thread.resourceId = json.resourceId;
  return thread;
}

function toMessage(threadId: string, json: MessageJson): MessageRecord {
  const record: MessageRecord = { threadId, seq: json.seq, message: json.message, createdAt: json.createdAt };
  if (json.runId !== null) record.runId = json.runId;
  return record;
}

function toToolExecution(row: ToolExecutionRow): ToolExecution {
  const execution: ToolExecution = {
    runId: row.run_id,
    toolCallId: row.tool_call_id,
    threadId: row.thread_id,
    toolName: row.tool_name,
    idempotencyKey: row.idempotency_key,
    status: row.status,
    attempts: row.attempts,
    startedAt: row.started_at,
  };
  if (row.result !== null) execution.result = row.result;
  if (row.completed_at !== null) execution.completedAt = row.completed_at;
  return execution;
}

function toLease(row: LeaseRow): Lease {
  const lease: Lease = {
    threadId: row.thread_id,
    owner: row.owner,
    runId: row.run_id,
    token: row.token,
    renewedAt: row.renewed_at,
    expiresAt: row.expires_at,
  };
  if (row.incarnation !== null) lease.incarnation = row.incarnation;
  return lease;
}

function toPage<T>(rows: T[], limit: number, cursorOf: (last: T) => string): Page<T> {
  if (rows.length <= limit) return { items: rows };
  const items = rows.slice(0, limit);
  return { items, nextCursor: cursorOf(items[items.length - 1]!) };
}

function invalid(message: string, details?: Record<string, unknown>): LunationError {
  return new LunationError('invalid-argument', message, details === undefined ? {} : { details });
}

function invalidCommit(threadId: string, detail: string): LunationError {
  const owner = JSON.parse(detail) as { runId: string; toolCallId?: string; threadId: string };
  const what =
    owner.toolCallId === undefined
      ? `run "${owner.runId}"`
      : `tool call "${owner.toolCallId}" of run "${owner.runId}"`;
  return invalid(
    `Invalid commit: ${what} already belongs to thread "${owner.threadId}", not "${threadId}"; nothing was written`,
    {
      threadId,
      runId: owner.runId,
      ...(owner.toolCallId === undefined ? {} : { toolCallId: owner.toolCallId }),
      ownerThreadId: owner.threadId,
    },
  );
}

function closedError(): LunationError {
  return new LunationError(
    'store-unavailable',
    'PostgresStore is closed; create a new store to keep using the database',
    { retryable: false },
  );
}

function threadNotFound(threadId: string): LunationError {
  return new LunationError(
    'not-found',
    `Thread "${threadId}" does not exist; create it with createThread first`,
    { details: { threadId } },
  );
}

function staleLease(threadId: string, token: number, currentToken: number): LunationError {
  return new LunationError(
    'stale-lease',
    `Lease token ${token} of thread "${threadId}" is stale (token ${currentToken} was issued since); nothing was written, stop this run`,
    { details: { threadId, token, currentToken } },
  );
}

function completionValues(input: CompleteToolExecutionInput, now: number): unknown[] {
  return [input.runId, input.toolCallId, toJsonText(input.result, 'result'), now, input.leaseToken ?? null];
}

/** The store's own errors of `complete_tool_execution`, as LunationErrors. */
function completionRejection(input: CompleteToolExecutionInput): Rejection {
  return (state, detail) => {
    if (state === 'LN404') {
      return new LunationError(
        'not-found',
        `Tool call "${input.toolCallId}" of run "${input.runId}" was never begun; call beginToolExecution first`,
        { details: { runId: input.runId, toolCallId: input.toolCallId } },
      );
    }
    if (state === 'LN410') {
      const { threadId, currentToken } = JSON.parse(detail) as { threadId: string; currentToken: number };
      return staleLease(threadId, input.leaseToken!, currentToken);
    }
    return undefined;
  };
}

/**
 * The transaction as a tool's effect sees it: once `signal` aborts (the caller gave up on the call), every
 * statement built on it fails with the signal's reason instead of running.
 */
function effectTransaction(
  transaction: Transaction<unknown>,
  signal: AbortSignal | undefined,
): Transaction<unknown> {
  if (signal === undefined) return transaction;
  return transaction.withPlugin({
    transformQuery: ({ node }) => {
      signal.throwIfAborted();
      return node;
    },
    transformResult: async ({ result }) => result,
  });
}
