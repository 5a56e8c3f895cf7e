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
  type ToolExecution,
} from '@lunation/contract';
import {
  type CheckedListMessagesOptions,
  type CheckedListRunsOptions,
  type CheckedListThreadsOptions,
  leaseHeldElsewhere,
  ledgerEntriesToWrite,
  ledgerEntryElsewhere,
  type StoreBackend,
  toJsonText,
  unissuedLeaseToken,
} from '@lunation/contract/store-utils';
import { Redis } from 'ioredis';
import { type LuaScript, redisScripts } from './redis-scripts.js';
import type { RedisClient, RedisStoreOptions } from './redis-store-options.js';
import { toStoreError } from './to-store-error.js';

/** A Redis hash as HGETALL returns it: field, value, field, value, ... */
type FlatHash = string[];

/** Width of the zero-padded createdAt in index members, so lexical order is numeric order. */
const timestampWidth = 15;

/**
 * The atomic operations of `RedisStore`, each one Lua script (so atomic and one round trip); `CheckedStore`
 * checks their input and the closed state first.
 */
export class RedisBackend implements StoreBackend {
  readonly kind = 'redis';
  readonly #client: RedisClient;
  readonly #ownedClient: Redis | undefined;
  readonly #prefix: string;
  readonly #clock: Clock;
  #lastConnectionError: unknown;

  constructor(options: RedisStoreOptions = {}) {
    const prefix = options.keyPrefix ?? 'lunation:';
    this.#clock = options.clock ?? systemClock;
    if (typeof prefix !== 'string') throw invalid(`keyPrefix must be a string, got ${typeof prefix}`);
    this.#prefix = prefix;
    if ('client' in options) {
      if (options.client.options?.keyPrefix) {
        throw invalid(
          `The injected Redis client has keyPrefix "${options.client.options.keyPrefix}", which Lua scripts do not see; pass keyPrefix to RedisStore instead`,
        );
      }
      this.#client = options.client;
    } else {
      const url = options.url ?? 'redis://127.0.0.1:6379';
      const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 5_000 });
      client.on('error', (error: unknown) => {
        this.#lastConnectionError = error;
      });
      client.on('ready', () => {
        this.#lastConnectionError = undefined;
      });
      this.#ownedClient = client;
      this.#client = client;
    }
  }

  async close(): Promise<void> {
    const client = this.#ownedClient;
    if (client === undefined) return;
    if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
    else client.disconnect();
  }

  async createThread(input: CreateThreadInput): Promise<ThreadRecord> {
    const metadataJson = toJsonText(input.metadata ?? {}, 'metadata');
    const now = this.#clock.now();
    const created = await this.#run(redisScripts.createThread, [
      input.id,
      input.resourceId ?? '',
      metadataJson,
      now,
      indexMember(now, input.id),
    ]);
    if (created === 0) {
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
    return toThread((await this.#run(redisScripts.getThread, [threadId])) as FlatHash);
  }

  async listThreads(options: CheckedListThreadsOptions): Promise<Page<ThreadRecord>> {
    const { limit } = options;
    const start = options.cursor === undefined ? '-' : `(${decodeCursor(options.cursor, 'threads')}`;
    const [members, hashes] = (await this.#run(redisScripts.listThreads, [
      options.resourceId ?? '',
      start,
      limit + 1,
    ])) as [string[], FlatHash[]];
    const threads = hashes.map((hash) => toThread(hash)!);
    return toPage(threads, members, limit, 'threads');
  }

  async updateThreadMetadata(threadId: string, metadata: Record<string, unknown>): Promise<ThreadRecord> {
    const hash = (await this.#run(redisScripts.updateThreadMetadata, [
      threadId,
      toJsonText(metadata, 'metadata'),
      this.#clock.now(),
    ])) as FlatHash | null;
    if (hash === null) throw threadNotFound(threadId);
    return toThread(hash)!;
  }

  async deleteThread(threadId: string): Promise<boolean> {
    return (await this.#run(redisScripts.deleteThread, [threadId])) === 1;
  }

  async listMessages(threadId: string, options: CheckedListMessagesOptions): Promise<MessageRecord[]> {
    const { fromSeq } = options;
    const lastSeq = Math.min(
      options.toSeq ?? Number.POSITIVE_INFINITY,
      options.limit === undefined ? Number.POSITIVE_INFINITY : fromSeq + options.limit - 1,
    );
    if (lastSeq < fromSeq) return [];
    const records = (await this.#run(redisScripts.listMessages, [
      threadId,
      fromSeq - 1,
      lastSeq === Number.POSITIVE_INFINITY ? -1 : lastSeq - 1,
    ])) as string[];
    return records.map((record) => JSON.parse(record) as MessageRecord);
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    return parseJson<RunRecord>(await this.#run(redisScripts.getRun, [runId]));
  }

  async getLatestRun(threadId: string): Promise<RunRecord | undefined> {
    return parseJson<RunRecord>(await this.#run(redisScripts.getLatestRun, [threadId]));
  }

  async listRuns(threadId: string, options: CheckedListRunsOptions): Promise<Page<RunRecord>> {
    const { limit } = options;
    const start = options.cursor === undefined ? '-' : `(${decodeCursor(options.cursor, 'runs')}`;
    const [members, records] = (await this.#run(redisScripts.listRuns, [threadId, start, limit + 1])) as [
      string[],
      string[],
    ];
    return toPage(
      records.map((record) => JSON.parse(record) as RunRecord),
      members,
      limit,
      'runs',
    );
  }

  async getThreadState(threadId: string): Promise<Record<string, unknown>> {
    return parseJson(await this.#run(redisScripts.getThreadState, [threadId])) ?? {};
  }

  async commit(commit: CheckpointCommit): Promise<CheckpointResult> {
    const { threadId, expectedMessageCount, leaseToken, run, threadState } = commit;
    const runId = run?.identity.runId;
    const messageRunId = commit.runId ?? runId;
    const args: (string | number)[] = [threadId, expectedMessageCount, leaseToken ?? ''];
    const now = this.#clock.now();
    args.push(now);
    args.push(threadState === undefined ? '' : toJsonText(threadState, 'threadState'));
    if (run === undefined) {
      args.push('', '', '');
    } else {
      args.push(run.identity.runId, padTimestamp(run.createdAt), toJsonText(run, 'run'));
    }
    const toolExecutions = ledgerEntriesToWrite(commit.toolExecutions ?? []);
    args.push(toolExecutions.length);
    toolExecutions.forEach((execution, index) => {
      const { status, attempts, result, completedAt, ...record } = execution;
      args.push(
        execution.runId,
        execution.toolCallId,
        toJsonText(record, `toolExecutions[${index}]`),
        status,
        attempts,
        result === undefined ? '' : toJsonText(result, `toolExecutions[${index}].result`),
        completedAt ?? '',
      );
    });
    commit.messages.forEach((message, index) => {
      const record: MessageRecord = {
        threadId,
        seq: expectedMessageCount + index + 1,
        message,
        createdAt: now,
      };
      if (messageRunId !== undefined) record.runId = messageRunId;
      args.push(toJsonText(record, `messages[${index}]`));
    });

    const [outcome, value, ...ids] = (await this.#run(redisScripts.commit, args)) as [
      string,
      unknown,
      ...string[],
    ];
    switch (outcome) {
      case 'ok':
        return { messageCount: Number(value) };
      case 'not-found':
        throw threadNotFound(threadId);
      case 'stale-lease':
        throw staleLease(threadId, leaseToken!, Number(value));
      case 'lease-lost':
        throw unissuedLeaseToken(threadId, leaseToken!, Number(value));
      case 'thread-busy':
        throw leaseHeldElsewhere(threadId, {
          owner: String(value),
          runId: ids[0] ?? '',
          ...(ids[1] ? { expiresAt: Number(ids[1]) } : {}),
        });
      case 'store-conflict':
        throw new LunationError(
          'store-conflict',
          `Thread "${threadId}" has ${value} messages but the commit expected ${expectedMessageCount}; another writer committed first, reload the checkpoint and retry`,
          { details: { threadId, expectedMessageCount, messageCount: Number(value) } },
        );
      case 'tool-elsewhere':
        throw ledgerEntryElsewhere(ids[0] ?? '', ids[1] ?? '', String(value));
      default:
        throw invalid(`Invalid commit: run "${runId}" already belongs to thread "${String(value)}"`);
    }
  }

  async loadCheckpoint(threadId: string): Promise<ThreadCheckpoint | undefined> {
    const reply = (await this.#run(redisScripts.loadCheckpoint, [threadId])) as
      | [FlatHash, string[], string | null, string | null]
      | null;
    if (reply === null) return undefined;
    const [thread, messages, state, latestRun] = reply;
    return {
      thread: toThread(thread)!,
      messages: messages.map((record) => JSON.parse(record) as MessageRecord),
      threadState: parseJson(state) ?? {},
      latestRun: parseJson<RunRecord>(latestRun),
    };
  }

  async beginToolExecution(input: BeginToolExecutionInput): Promise<ToolExecution> {
    const record = {
      runId: input.runId,
      toolCallId: input.toolCallId,
      threadId: input.threadId,
      toolName: input.toolName,
      idempotencyKey: input.idempotencyKey,
      startedAt: this.#clock.now(),
    };
    const [outcome, value] = (await this.#run(redisScripts.beginToolExecution, [
      input.runId,
      input.toolCallId,
      input.threadId,
      JSON.stringify(record),
      input.leaseToken ?? '',
    ])) as [string, unknown];
    if (outcome === 'stale-lease') throw staleLease(input.threadId, input.leaseToken!, Number(value));
    if (outcome === 'tool-elsewhere')
      throw ledgerEntryElsewhere(input.runId, input.toolCallId, String(value));
    return toToolExecution(value as FlatHash)!;
  }

  async completeToolExecution(input: CompleteToolExecutionInput): Promise<ToolExecution> {
    const [outcome, value, threadId] = (await this.#run(redisScripts.completeToolExecution, [
      input.runId,
      input.toolCallId,
      toJsonText(input.result, 'result'),
      this.#clock.now(),
      input.leaseToken ?? '',
    ])) as [string, unknown, string?];
    if (outcome === 'not-found') {
      throw new LunationError(
        'not-found',
        `Tool call "${input.toolCallId}" of run "${input.runId}" was never begun; call beginToolExecution first`,
        { details: { runId: input.runId, toolCallId: input.toolCallId } },
      );
    }
    if (outcome === 'stale-lease') throw staleLease(threadId!, input.leaseToken!, Number(value));
    return toToolExecution(value as FlatHash)!;
  }

  async getToolExecution(runId: string, toolCallId: string): Promise<ToolExecution | undefined> {
    return toToolExecution((await this.#run(redisScripts.getToolExecution, [runId, toolCallId])) as FlatHash);
  }

  async listToolExecutions(runId: string): Promise<ToolExecution[]> {
    const hashes = (await this.#run(redisScripts.listToolExecutions, [runId])) as FlatHash[];
    return hashes.map((hash) => toToolExecution(hash)!);
  }

  async acquireLease(input: AcquireLeaseInput): Promise<Lease> {
    const reply = (await this.#run(redisScripts.acquireLease, [
      input.threadId,
      input.owner,
      input.runId,
      input.ttlMs,
      input.incarnation ?? '',
    ])) as string[];
    if (reply[0] === 'thread-busy') {
      const [, owner, runId, incarnation, renewedAt, expiresAt] = reply;
      throw new LunationError(
        'thread-busy',
        `Thread "${input.threadId}" already has an active run (run ${runId}); wait for it or cancel it`,
        {
          details: {
            threadId: input.threadId,
            runId,
            owner,
            incarnation: incarnation || undefined,
            renewedAt: Number(renewedAt),
            expiresAt: Number(expiresAt),
          },
        },
      );
    }
    return toLease({
      threadId: input.threadId,
      owner: input.owner,
      runId: input.runId,
      incarnation: input.incarnation,
      token: reply[1]!,
      renewedAt: reply[2]!,
      expiresAt: reply[3]!,
    });
  }

  async renewLease(input: RenewLeaseInput): Promise<Lease> {
    const [outcome, owner, runId, expiresAt, incarnation, renewedAt] = (await this.#run(
      redisScripts.renewLease,
      [input.threadId, input.token, input.ttlMs],
    )) as [string, string | null, string, string, string, string];
    if (outcome === 'lease-lost') {
      const current = owner === null ? undefined : Number(owner);
      throw new LunationError(
        'lease-lost',
        `Lease token ${input.token} no longer holds thread "${input.threadId}"${current !== undefined && current !== input.token ? ` (token ${current} was issued since)` : ''}; stop the run, another process may own the thread`,
        { details: { threadId: input.threadId, token: input.token, currentToken: current } },
      );
    }
    return toLease({
      threadId: input.threadId,
      owner: owner!,
      runId,
      incarnation,
      token: input.token,
      renewedAt,
      expiresAt,
    });
  }

  async releaseLease(input: ReleaseLeaseInput): Promise<boolean> {
    return (await this.#run(redisScripts.releaseLease, [input.threadId, input.token])) === 1;
  }

  async getLease(threadId: string): Promise<Lease | undefined> {
    const hash = fromFlatHash((await this.#run(redisScripts.getLease, [threadId])) as FlatHash);
    if (hash === undefined) return undefined;
    return toLease({
      threadId,
      owner: hash.owner!,
      runId: hash.runId!,
      incarnation: hash.incarnation,
      token: hash.token!,
      // A lease written before renewedAt existed counts as renewed when it expires (never taken over early).
      renewedAt: hash.renewedAt ?? hash.expiresAt!,
      expiresAt: hash.expiresAt!,
    });
  }

  toStoreError(error: unknown): LunationError {
    return toStoreError(error, 'store', this.#lastConnectionError);
  }

  /** Runs `script` with EVALSHA, loading it with EVAL when the server does not know it yet. */
  async #run(script: LuaScript, args: (string | number)[]): Promise<unknown> {
    try {
      try {
        return await this.#client.evalsha(script.sha, 0, this.#prefix, ...args);
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
        return await this.#client.eval(script.source, 0, this.#prefix, ...args);
      }
    } catch (error) {
      throw toStoreError(error, script.name, this.#lastConnectionError);
    }
  }
}

function padTimestamp(timestamp: number): string {
  return String(timestamp).padStart(timestampWidth, '0');
}

/** A thread's member in the thread indexes: ordered by createdAt, then id. */
function indexMember(createdAt: number, threadId: string): string {
  return `${padTimestamp(createdAt)}:${threadId}`;
}

/** What the index member in a cursor looks like, per listing; a cursor is `<listing>:<member>` in base64url. */
const cursorMembers = { threads: /^\d{15}:./s, runs: /^\d{15}:\d{12}:./s };

type Listing = keyof typeof cursorMembers;

function encodeCursor(listing: Listing, member: string): string {
  return Buffer.from(`${listing}:${member}`).toString('base64url');
}

/** The index member after which the page starts; `invalid-argument` for anything but our own cursor. */
function decodeCursor(cursor: string, listing: Listing): string {
  const text = typeof cursor === 'string' ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const member = text.slice(listing.length + 1);
  if (
    !text.startsWith(`${listing}:`) ||
    !cursorMembers[listing].test(member) ||
    encodeCursor(listing, member) !== cursor
  ) {
    throw invalid(`Invalid cursor ${JSON.stringify(cursor)}; pass the nextCursor of a previous page`);
  }
  return member;
}

function toPage<T>(items: T[], members: string[], limit: number, listing: Listing): Page<T> {
  if (items.length <= limit) return { items };
  return { items: items.slice(0, limit), nextCursor: encodeCursor(listing, members[limit - 1]!) };
}

function fromFlatHash(flat: FlatHash | null): Record<string, string> | undefined {
  if (flat === null || flat.length === 0) return undefined;
  const hash: Record<string, string> = {};
  for (let index = 0; index < flat.length; index += 2) hash[flat[index]!] = flat[index + 1]!;
  return hash;
}

function toThread(flat: FlatHash): ThreadRecord | undefined {
  const hash = fromFlatHash(flat);
  if (hash === undefined) return undefined;
  const thread: ThreadRecord = {
    id: hash.id!,
    metadata: JSON.parse(hash.metadata!),
    messageCount: Number(hash.messageCount),
    createdAt: Number(hash.createdAt),
    updatedAt: Number(hash.updatedAt),
  };
  if (hash.resourceId !== undefined) thread.resourceId = hash.resourceId;
  return thread;
}

function toToolExecution(flat: FlatHash): ToolExecution | undefined {
  const hash = fromFlatHash(flat);
  if (hash === undefined) return undefined;
  const execution: ToolExecution = {
    ...JSON.parse(hash.record!),
    status: hash.status,
    attempts: Number(hash.attempts),
  };
  if (hash.result !== undefined) execution.result = JSON.parse(hash.result);
  if (hash.completedAt !== undefined) execution.completedAt = Number(hash.completedAt);
  return execution;
}

function parseJson<T = Record<string, unknown>>(value: unknown): T | undefined {
  return typeof value === 'string' ? (JSON.parse(value) as T) : undefined;
}

function invalid(message: string): LunationError {
  return new LunationError('invalid-argument', message);
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

/** A lease from the strings Redis holds; an empty incarnation is none. */
function toLease(fields: {
  threadId: string;
  owner: string;
  runId: string;
  incarnation: string | undefined;
  token: string | number;
  renewedAt: string;
  expiresAt: string;
}): Lease {
  const lease: Lease = {
    threadId: fields.threadId,
    owner: fields.owner,
    runId: fields.runId,
    token: Number(fields.token),
    renewedAt: Number(fields.renewedAt),
    expiresAt: Number(fields.expiresAt),
  };
  if (fields.incarnation) lease.incarnation = fields.incarnation;
  return lease;
}

function staleLease(threadId: string, token: number, currentToken: number): LunationError {
  return new LunationError(
    'stale-lease',
    `Lease token ${token} of thread "${threadId}" is stale (token ${currentToken} was issued since); nothing was written, stop this run`,
    { details: { threadId, token, currentToken } },
  );
}
