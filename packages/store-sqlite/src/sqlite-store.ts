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
  type ToolExecution,
} from '@lunation/contract';
import Database from 'better-sqlite3';
import type { Kysely, SqliteStatement as KyselySqliteStatement, SqliteDatabase } from 'kysely';
import { assertId, assertInteger, assertObject, pageLimit, toJson } from './assert-input.js';
import { decodeCursor, encodeCursor } from './page-cursor.js';
import { createKysely, createMigrator, migrate } from './sqlite-migrations.js';
import { toStoreError } from './to-store-error.js';

/** The part of a better-sqlite3 statement the store uses. */
export interface SqliteStatement extends KyselySqliteStatement {
  get(parameters: ReadonlyArray<unknown>): unknown;
}

/** The part of a better-sqlite3 `Database` the store uses. */
export interface SqliteClient extends SqliteDatabase {
  prepare(sql: string): SqliteStatement;
}

export interface SqliteStorePathOptions {
  /** The database file, created if missing (`:memory:` works too, but only within one store). */
  path: string;
  /** How long a write waits for another connection's lock before failing. @default 5000 */
  busyTimeoutMs?: number;
  /**
   * `normal`: commits survive a process crash, the last ones may roll back on power loss (fast).
   * `full`: every commit is fsynced. @default 'normal'
   */
  synchronous?: 'normal' | 'full';
}

export interface SqliteStoreClientOptions {
  /** An open better-sqlite3 database, used as configured and left open by `close()`. */
  client: SqliteClient;
}

export type SqliteStoreOptions = SqliteStorePathOptions | SqliteStoreClientOptions;

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

interface LeaseRow {
  token: number;
  owner: string;
  runId: string;
  expiresAt: number | null;
}

const threadColumns =
  'id, resource_id AS resourceId, metadata, message_count AS messageCount, created_at AS createdAt, updated_at AS updatedAt';
const leaseColumns = 'token, owner, run_id AS runId, expires_at AS expiresAt';

function prepareStatements(client: SqliteClient) {
  const prepare = (sql: string) => client.prepare(sql);
  return {
    begin: prepare('BEGIN'),
    beginImmediate: prepare('BEGIN IMMEDIATE'),
    commit: prepare('COMMIT'),
    rollback: prepare('ROLLBACK'),

    insertThread: prepare(
      `INSERT INTO lunation_threads (id, resource_id, metadata, message_count, created_at, updated_at)
       VALUES (?, ?, ?, 0, ?, ?) ON CONFLICT (id) DO NOTHING`,
    ),
    selectThread: prepare(`SELECT ${threadColumns} FROM lunation_threads WHERE id = ?`),
    listThreads: prepare(
      `SELECT ${threadColumns} FROM lunation_threads
       WHERE (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?`,
    ),
    listThreadsOfResource: prepare(
      `SELECT ${threadColumns} FROM lunation_threads
       WHERE resource_id = ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?`,
    ),
    updateMetadata: prepare(
      `UPDATE lunation_threads SET metadata = ?, updated_at = ? WHERE id = ? RETURNING ${threadColumns}`,
    ),
    deleteMessages: prepare('DELETE FROM lunation_messages WHERE thread_id = ?'),
    deleteRuns: prepare('DELETE FROM lunation_runs WHERE thread_id = ?'),
    deleteToolExecutions: prepare('DELETE FROM lunation_tool_executions WHERE thread_id = ?'),
    deleteThread: prepare('DELETE FROM lunation_threads WHERE id = ?'),

    // Checks the count and the fencing token and bumps the thread in one statement; no row: diagnose.
    bumpThread: prepare(
      `UPDATE lunation_threads SET message_count = ?, updated_at = ?, state = coalesce(?, state)
       WHERE id = ? AND message_count = ?
         AND (? IS NULL OR NOT EXISTS (SELECT 1 FROM lunation_leases WHERE thread_id = ? AND token > ?))
       RETURNING message_count`,
    ),
    commitHead: prepare(
      `SELECT t.message_count AS messageCount, l.token AS leaseToken
       FROM lunation_threads t LEFT JOIN lunation_leases l ON l.thread_id = t.id WHERE t.id = ?`,
    ),
    insertMessage: prepare(
      'INSERT INTO lunation_messages (thread_id, seq, message, run_id, created_at) VALUES (?, ?, ?, ?, ?)',
    ),
    // A run keeps the position (created_at, seq) of its first commit; later commits replace the record.
    updateRun: prepare('UPDATE lunation_runs SET record = ? WHERE run_id = ? AND thread_id = ?'),
    insertRun: prepare(
      `INSERT INTO lunation_runs (run_id, thread_id, record, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (run_id) DO NOTHING`,
    ),
    upsertToolExecution: prepare(
      `INSERT INTO lunation_tool_executions (run_id, tool_call_id, thread_id, record) VALUES (?, ?, ?, ?)
       ON CONFLICT (run_id, tool_call_id) DO UPDATE SET thread_id = excluded.thread_id, record = excluded.record`,
    ),

    listMessages: prepare(
      `SELECT seq, message, run_id AS runId, created_at AS createdAt FROM lunation_messages
       WHERE thread_id = ? AND seq >= ? AND seq <= ? ORDER BY seq LIMIT ?`,
    ),
    selectThreadState: prepare('SELECT state FROM lunation_threads WHERE id = ?'),
    selectRun: prepare('SELECT record FROM lunation_runs WHERE run_id = ?'),
    latestRun: prepare(
      'SELECT record FROM lunation_runs WHERE thread_id = ? ORDER BY created_at DESC, seq DESC LIMIT 1',
    ),
    listRuns: prepare(
      `SELECT record, created_at AS createdAt, seq FROM lunation_runs
       WHERE thread_id = ? AND (created_at, seq) > (?, ?) ORDER BY created_at, seq LIMIT ?`,
    ),

    selectToolExecution: prepare(
      'SELECT record FROM lunation_tool_executions WHERE run_id = ? AND tool_call_id = ?',
    ),
    listToolExecutions: prepare(
      'SELECT record FROM lunation_tool_executions WHERE run_id = ? ORDER BY rowid',
    ),

    selectLease: prepare(`SELECT ${leaseColumns} FROM lunation_leases WHERE thread_id = ?`),
    selectLeaseToken: prepare('SELECT token FROM lunation_leases WHERE thread_id = ?'),
    upsertLease: prepare(
      `INSERT INTO lunation_leases (thread_id, token, owner, run_id, expires_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (thread_id) DO UPDATE SET token = excluded.token, owner = excluded.owner,
         run_id = excluded.run_id, expires_at = excluded.expires_at`,
    ),
    renewLease: prepare(
      `UPDATE lunation_leases SET expires_at = ?
       WHERE thread_id = ? AND token = ? AND expires_at IS NOT NULL RETURNING ${leaseColumns}`,
    ),
    endLease: prepare(
      'UPDATE lunation_leases SET expires_at = NULL WHERE thread_id = ? AND token = ? AND expires_at IS NOT NULL',
    ),
    endAnyLease: prepare('UPDATE lunation_leases SET expires_at = NULL WHERE thread_id = ?'),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

/**
 * A `LunationStore` in one SQLite file (kysely migrations, better-sqlite3 prepared statements).
 *
 * @remarks The schema is migrated on first use; call `init()` (or use `SqliteStore.open`) to do it up front.
 */
export class SqliteStore implements LunationStore {
  readonly kind = 'sqlite';
  readonly #options: SqliteStoreOptions;
  readonly #ownsClient: boolean;
  #client: SqliteClient | undefined;
  #kysely: Kysely<unknown> | undefined;
  #statements: Statements | undefined;
  #initializing: Promise<Statements> | undefined;
  #closed = false;

  constructor(options: SqliteStoreOptions) {
    this.#options = options;
    if ('client' in options) {
      this.#client = options.client;
      this.#ownsClient = false;
    } else {
      assertId(options.path, 'path');
      if (options.busyTimeoutMs !== undefined) assertInteger(options.busyTimeoutMs, 'busyTimeoutMs', 0);
      this.#ownsClient = true;
    }
  }

  /** Opens the store and brings its schema up to date. */
  static async open(options: SqliteStoreOptions): Promise<SqliteStore> {
    const store = new SqliteStore(options);
    await store.init();
    return store;
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
    this.#statements = undefined;
    if (this.#ownsClient) this.#client?.close();
    this.#client = undefined;
  }

  async createThread(input: CreateThreadInput): Promise<ThreadRecord> {
    assertId(input.id, 'id');
    if (input.resourceId !== undefined) assertId(input.resourceId, 'resourceId');
    const metadata = input.metadata ?? {};
    assertObject(metadata, 'metadata');
    const metadataJson = toJson(metadata, 'metadata');
    return this.#run((statements) => {
      const now = Date.now();
      const { changes } = statements.insertThread.run([
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
    });
  }

  async getThread(threadId: string): Promise<ThreadRecord | undefined> {
    assertId(threadId, 'threadId');
    return this.#run((statements) => {
      const row = statements.selectThread.get([threadId]) as ThreadRow | undefined;
      return row && toThread(row);
    });
  }

  async listThreads(options: ListThreadsOptions = {}): Promise<Page<ThreadRecord>> {
    const limit = pageLimit(options.limit);
    if (options.resourceId !== undefined) assertId(options.resourceId, 'resourceId');
    const [createdAt, id] = options.cursor === undefined ? [-1, ''] : decodeCursor(options.cursor, 'string');
    return this.#run((statements) => {
      const rows = (
        options.resourceId === undefined
          ? statements.listThreads.all([createdAt, id, limit + 1])
          : statements.listThreadsOfResource.all([options.resourceId, createdAt, id, limit + 1])
      ) as ThreadRow[];
      return toPage(rows.map(toThread), limit, (thread) => encodeCursor([thread.createdAt, thread.id]));
    });
  }

  async updateThreadMetadata(threadId: string, metadata: Record<string, unknown>): Promise<ThreadRecord> {
    assertId(threadId, 'threadId');
    assertObject(metadata, 'metadata');
    const metadataJson = toJson(metadata, 'metadata');
    return this.#run((statements) => {
      const row = statements.updateMetadata.get([metadataJson, Date.now(), threadId]) as
        | ThreadRow
        | undefined;
      if (!row) throw threadNotFound(threadId);
      return toThread(row);
    });
  }

  async deleteThread(threadId: string): Promise<boolean> {
    assertId(threadId, 'threadId');
    return this.#run((statements) =>
      this.#write(statements, () => {
        if (!statements.selectThread.get([threadId])) return false;
        statements.deleteMessages.run([threadId]);
        statements.deleteRuns.run([threadId]);
        statements.deleteToolExecutions.run([threadId]);
        statements.endAnyLease.run([threadId]);
        statements.deleteThread.run([threadId]);
        return true;
      }),
    );
  }

  async listMessages(threadId: string, options: ListMessagesOptions = {}): Promise<MessageRecord[]> {
    assertId(threadId, 'threadId');
    const fromSeq = options.fromSeq ?? 1;
    assertInteger(fromSeq, 'fromSeq', 1);
    if (options.toSeq !== undefined) assertInteger(options.toSeq, 'toSeq', 0);
    if (options.limit !== undefined) assertInteger(options.limit, 'limit', 1);
    return this.#run((statements) => {
      const rows = statements.listMessages.all([
        threadId,
        fromSeq,
        options.toSeq ?? Number.MAX_SAFE_INTEGER,
        options.limit ?? -1,
      ]) as MessageRow[];
      return rows.map((row) => toMessage(threadId, row));
    });
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    assertId(runId, 'runId');
    return this.#run((statements) => parseRecord<RunRecord>(statements.selectRun.get([runId])));
  }

  async getLatestRun(threadId: string): Promise<RunRecord | undefined> {
    assertId(threadId, 'threadId');
    return this.#run((statements) => parseRecord<RunRecord>(statements.latestRun.get([threadId])));
  }

  async listRuns(threadId: string, options: ListRunsOptions = {}): Promise<Page<RunRecord>> {
    assertId(threadId, 'threadId');
    const limit = pageLimit(options.limit);
    const [createdAt, seq] = options.cursor === undefined ? [-1, 0] : decodeCursor(options.cursor, 'number');
    return this.#run((statements) => {
      const rows = statements.listRuns.all([threadId, createdAt, seq, limit + 1]) as RunRow[];
      const page = toPage(rows, limit, (row) => encodeCursor([row.createdAt, row.seq]));
      return {
        items: page.items.map((row) => JSON.parse(row.record) as RunRecord),
        ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
      };
    });
  }

  async getThreadState(threadId: string): Promise<Record<string, unknown>> {
    assertId(threadId, 'threadId');
    return this.#run((statements) => readThreadState(statements, threadId));
  }

  async commit(commit: CheckpointCommit): Promise<CheckpointResult> {
    const { threadId, expectedMessageCount, leaseToken, run, threadState } = commit;
    assertId(threadId, 'threadId');
    assertInteger(expectedMessageCount, 'expectedMessageCount', 0);
    if (leaseToken !== undefined) assertInteger(leaseToken, 'leaseToken', 1);
    if (!Array.isArray(commit.messages)) throw invalidCommit('messages must be an array');
    const messages = commit.messages.map((message, index) => toJson(message, `messages[${index}]`));
    const runId = run?.identity.runId;
    let runJson: string | undefined;
    if (run !== undefined) {
      assertId(runId, 'run.identity.runId');
      if (run.identity.threadId !== threadId) {
        throw invalidCommit(`run "${runId}" belongs to thread "${run.identity.threadId}", not "${threadId}"`);
      }
      assertInteger(run.createdAt, 'run.createdAt', 0);
      runJson = toJson(run, 'run');
    }
    let stateJson: string | undefined;
    if (threadState !== undefined) {
      assertObject(threadState, 'threadState');
      stateJson = toJson(threadState, 'threadState');
    }
    const toolExecutions = (commit.toolExecutions ?? []).map((execution, index) => {
      assertId(execution.runId, `toolExecutions[${index}].runId`);
      assertId(execution.toolCallId, `toolExecutions[${index}].toolCallId`);
      if (execution.threadId !== threadId) {
        throw invalidCommit(`toolExecutions[${index}] belongs to thread "${execution.threadId}"`);
      }
      return [execution.runId, execution.toolCallId, threadId, toJson(execution, 'toolExecutions')];
    });

    return this.#run((statements) =>
      this.#write(statements, () => {
        const now = Date.now();
        const messageCount = expectedMessageCount + messages.length;
        const token = leaseToken ?? null;
        const bumped = statements.bumpThread.get([
          messageCount,
          now,
          stateJson ?? null,
          threadId,
          expectedMessageCount,
          token,
          threadId,
          token,
        ]);
        if (!bumped) throw commitRejection(statements, commit);
        let seq = expectedMessageCount;
        for (const message of messages) {
          seq += 1;
          statements.insertMessage.run([threadId, seq, message, runId ?? null, now]);
        }
        if (
          run !== undefined &&
          statements.updateRun.run([runJson, runId, threadId]).changes === 0 &&
          statements.insertRun.run([runId, threadId, runJson, run.createdAt]).changes === 0
        ) {
          throw invalidCommit(`run "${runId}" already belongs to another thread`);
        }
        for (const execution of toolExecutions) statements.upsertToolExecution.run(execution);
        return { messageCount };
      }),
    );
  }

  async loadCheckpoint(threadId: string): Promise<ThreadCheckpoint | undefined> {
    assertId(threadId, 'threadId');
    return this.#run((statements) => {
      statements.begin.run([]);
      try {
        const row = statements.selectThread.get([threadId]) as ThreadRow | undefined;
        if (!row) return undefined;
        const messages = statements.listMessages.all([
          threadId,
          1,
          Number.MAX_SAFE_INTEGER,
          -1,
        ]) as MessageRow[];
        return {
          thread: toThread(row),
          messages: messages.map((message) => toMessage(threadId, message)),
          threadState: readThreadState(statements, threadId),
          latestRun: parseRecord<RunRecord>(statements.latestRun.get([threadId])),
        };
      } finally {
        statements.commit.run([]);
      }
    });
  }

  async beginToolExecution(input: BeginToolExecutionInput): Promise<ToolExecution> {
    assertId(input.runId, 'runId');
    assertId(input.toolCallId, 'toolCallId');
    assertId(input.threadId, 'threadId');
    assertId(input.toolName, 'toolName');
    assertId(input.idempotencyKey, 'idempotencyKey');
    if (input.leaseToken !== undefined) assertInteger(input.leaseToken, 'leaseToken', 1);
    return this.#run((statements) =>
      this.#write(statements, () => {
        assertFreshLease(statements, input.threadId, input.leaseToken);
        const existing = parseRecord<ToolExecution>(
          statements.selectToolExecution.get([input.runId, input.toolCallId]),
        );
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
              startedAt: Date.now(),
            };
        statements.upsertToolExecution.run([
          execution.runId,
          execution.toolCallId,
          execution.threadId,
          JSON.stringify(execution),
        ]);
        return execution;
      }),
    );
  }

  async completeToolExecution(input: CompleteToolExecutionInput): Promise<ToolExecution> {
    assertId(input.runId, 'runId');
    assertId(input.toolCallId, 'toolCallId');
    assertObject(input.result, 'result');
    if (input.leaseToken !== undefined) assertInteger(input.leaseToken, 'leaseToken', 1);
    const resultJson = toJson(input.result, 'result');
    return this.#run((statements) =>
      this.#write(statements, () => {
        const existing = parseRecord<ToolExecution>(
          statements.selectToolExecution.get([input.runId, input.toolCallId]),
        );
        if (!existing) {
          throw new LunationError(
            'not-found',
            `Tool call "${input.toolCallId}" of run "${input.runId}" was never begun; call beginToolExecution first`,
            { details: { runId: input.runId, toolCallId: input.toolCallId } },
          );
        }
        assertFreshLease(statements, existing.threadId, input.leaseToken);
        if (existing.status === 'completed') return existing;
        const execution: ToolExecution = {
          ...existing,
          status: 'completed',
          result: JSON.parse(resultJson),
          completedAt: Date.now(),
        };
        statements.upsertToolExecution.run([
          execution.runId,
          execution.toolCallId,
          execution.threadId,
          JSON.stringify(execution),
        ]);
        return execution;
      }),
    );
  }

  async getToolExecution(runId: string, toolCallId: string): Promise<ToolExecution | undefined> {
    assertId(runId, 'runId');
    assertId(toolCallId, 'toolCallId');
    return this.#run((statements) =>
      parseRecord<ToolExecution>(statements.selectToolExecution.get([runId, toolCallId])),
    );
  }

  async listToolExecutions(runId: string): Promise<ToolExecution[]> {
    assertId(runId, 'runId');
    return this.#run((statements) =>
      (statements.listToolExecutions.all([runId]) as { record: string }[]).map(
        (row) => JSON.parse(row.record) as ToolExecution,
      ),
    );
  }

  async acquireLease(input: AcquireLeaseInput): Promise<Lease> {
    assertId(input.threadId, 'threadId');
    assertId(input.owner, 'owner');
    assertId(input.runId, 'runId');
    assertInteger(input.ttlMs, 'ttlMs', 1);
    return this.#run((statements) =>
      this.#write(statements, () => {
        const now = Date.now();
        const current = statements.selectLease.get([input.threadId]) as LeaseRow | undefined;
        if (current && current.expiresAt !== null && current.expiresAt > now) {
          throw threadBusy(input.threadId, current.runId, current.owner);
        }
        const lease: Lease = {
          threadId: input.threadId,
          owner: input.owner,
          runId: input.runId,
          token: (current?.token ?? 0) + 1,
          expiresAt: now + input.ttlMs,
        };
        statements.upsertLease.run([lease.threadId, lease.token, lease.owner, lease.runId, lease.expiresAt]);
        return lease;
      }),
    );
  }

  async renewLease(input: RenewLeaseInput): Promise<Lease> {
    assertId(input.threadId, 'threadId');
    assertInteger(input.token, 'token', 1);
    assertInteger(input.ttlMs, 'ttlMs', 1);
    return this.#run((statements) => {
      const row = statements.renewLease.get([Date.now() + input.ttlMs, input.threadId, input.token]) as
        | LeaseRow
        | undefined;
      if (!row) {
        const current = statements.selectLeaseToken.get([input.threadId]) as { token: number } | undefined;
        throw new LunationError(
          'lease-lost',
          `Lease token ${input.token} no longer holds thread "${input.threadId}"${current && current.token !== input.token ? ` (token ${current.token} was issued since)` : ''}; stop the run, another process may own the thread`,
          { details: { threadId: input.threadId, token: input.token, currentToken: current?.token } },
        );
      }
      return toLease(input.threadId, row);
    });
  }

  async releaseLease(input: ReleaseLeaseInput): Promise<boolean> {
    assertId(input.threadId, 'threadId');
    assertInteger(input.token, 'token', 1);
    return this.#run((statements) => statements.endLease.run([input.threadId, input.token]).changes > 0);
  }

  async getLease(threadId: string): Promise<Lease | undefined> {
    assertId(threadId, 'threadId');
    return this.#run((statements) => {
      const row = statements.selectLease.get([threadId]) as LeaseRow | undefined;
      return row && row.expiresAt !== null && row.expiresAt > Date.now() ? toLease(threadId, row) : undefined;
    });
  }

  /** Runs synchronous `work` once the schema is ready, mapping driver errors to LunationErrors. */
  async #run<T>(work: (statements: Statements) => T): Promise<T> {
    const statements = this.#statements ?? (await this.#ready());
    try {
      return work(statements);
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /**
   * Runs `work` in a `BEGIN IMMEDIATE` transaction. The write lock is taken up front, so a racing writer
   * waits (busy timeout) instead of failing to upgrade a read; `work` is synchronous, so no other call of
   * this process interleaves.
   */
  #write<T>(statements: Statements, work: () => T): T {
    statements.beginImmediate.run([]);
    try {
      const result = work();
      statements.commit.run([]);
      return result;
    } catch (error) {
      try {
        statements.rollback.run([]);
      } catch {
        // SQLite already rolled back (it does so itself after some errors).
      }
      throw error;
    }
  }

  #ready(): Promise<Statements> {
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
    if (this.#statements) return Promise.resolve(this.#statements);
    this.#initializing ??= this.#initialize().catch((error: unknown) => {
      this.#initializing = undefined;
      throw toStoreError(error);
    });
    return this.#initializing;
  }

  async #initialize(): Promise<Statements> {
    const client = this.#client ?? this.#openClient();
    this.#client = client;
    const file = (client.prepare('PRAGMA database_list').all([]) as { name: string; file: string }[]).find(
      (database) => database.name === 'main',
    )?.file;
    await migrate(client, file ?? '');
    this.#kysely = createKysely(client);
    if (this.#closed) throw new LunationError('store-unavailable', 'SqliteStore was closed while opening');
    this.#statements = prepareStatements(client);
    return this.#statements;
  }

  #openClient(): SqliteClient {
    const options = this.#options as SqliteStorePathOptions;
    let client: Database.Database | undefined;
    try {
      client = new Database(options.path);
      client.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
      client.pragma('journal_mode = WAL');
      client.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      client.pragma('foreign_keys = ON');
      return client;
    } catch (error) {
      client?.close();
      throw new LunationError(
        'store-unavailable',
        `Cannot open SQLite database "${options.path}": ${error instanceof Error ? error.message : String(error)}; check that the directory exists and is writable`,
        { cause: error, retryable: false },
      );
    }
  }
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
  return { threadId, owner: row.owner, runId: row.runId, token: row.token, expiresAt: row.expiresAt! };
}

function toPage<T>(rows: T[], limit: number, cursorOf: (last: T) => string): Page<T> {
  if (rows.length <= limit) return { items: rows };
  const items = rows.slice(0, limit);
  return { items, nextCursor: cursorOf(items[items.length - 1]!) };
}

function parseRecord<T>(row: unknown): T | undefined {
  return row === undefined ? undefined : (JSON.parse((row as { record: string }).record) as T);
}

function readThreadState(statements: Statements, threadId: string): Record<string, unknown> {
  const row = statements.selectThreadState.get([threadId]) as { state: string | null } | undefined;
  return row?.state ? JSON.parse(row.state) : {};
}

/** Why `bumpThread` matched no row: the thread is missing, the lease is stale or the count is. */
function commitRejection(statements: Statements, commit: CheckpointCommit): LunationError {
  const { threadId, expectedMessageCount, leaseToken } = commit;
  const head = statements.commitHead.get([threadId]) as
    | { messageCount: number; leaseToken: number | null }
    | undefined;
  if (!head) return threadNotFound(threadId);
  if (leaseToken !== undefined && head.leaseToken !== null && leaseToken < head.leaseToken) {
    return staleLease(threadId, leaseToken, head.leaseToken);
  }
  return new LunationError(
    'store-conflict',
    `Thread "${threadId}" has ${head.messageCount} messages but the commit expected ${expectedMessageCount}; another writer committed first, reload the checkpoint and retry`,
    { details: { threadId, expectedMessageCount, messageCount: head.messageCount } },
  );
}

function assertFreshLease(statements: Statements, threadId: string, token: number | undefined): void {
  if (token === undefined) return;
  const row = statements.selectLeaseToken.get([threadId]) as { token: number } | undefined;
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

function threadBusy(threadId: string, runId: string, owner: string): LunationError {
  return new LunationError(
    'thread-busy',
    `Thread "${threadId}" already has an active run (run ${runId}); wait for it or cancel it`,
    { details: { threadId, runId, owner } },
  );
}

function invalidCommit(problem: string): LunationError {
  return new LunationError('invalid-argument', `Invalid commit: ${problem}`);
}
