import { z } from 'zod';
import { jsonObjectSchema, jsonValueSchema } from './json.js';
import { type Message, messageSchema } from './messages.js';
import { usageSchema } from './model.js';
import {
  runIdentitySchema,
  runStatusSchema,
  suspensionTicketSchema,
  terminationReasonSchema,
} from './run.js';
import { type ToolResult, toolResultSchema } from './tools.js';

/** Timestamps are epoch milliseconds. */
const timestamp = z.number().int().nonnegative();

/** A stored thread: its id, owner, metadata, message count and timestamps. */
export const threadRecordSchema = z.object({
  id: z.string().min(1),
  /** The owner or tenant of the thread (a user id, an API token's subject, ...). */
  resourceId: z.string().min(1).optional(),
  metadata: jsonObjectSchema,
  /** Number of committed messages; the next message gets `seq = messageCount + 1`. */
  messageCount: z.number().int().nonnegative(),
  createdAt: timestamp,
  updatedAt: timestamp,
});
/** A stored thread; see {@link threadRecordSchema}. */
export type ThreadRecord = z.infer<typeof threadRecordSchema>;

/** A committed message with its 1-based position in the thread. */
export const messageRecordSchema = z.object({
  threadId: z.string().min(1),
  seq: z.number().int().positive(),
  message: messageSchema,
  /** The run that produced the message. */
  runId: z.string().min(1).optional(),
  createdAt: timestamp,
});
/** A committed message with its position; see {@link messageRecordSchema}. */
export type MessageRecord = z.infer<typeof messageRecordSchema>;

/** A stored run: its identity, status, termination, steps, usage, open tickets and run-scoped state. */
export const runRecordSchema = z.object({
  identity: runIdentitySchema,
  status: runStatusSchema,
  termination: terminationReasonSchema.optional(),
  steps: z.number().int().nonnegative(),
  usage: usageSchema,
  /** Tickets of the calls this run is waiting on. */
  openTickets: z.array(suspensionTicketSchema),
  /** Persistent run-scoped state, by state key. */
  state: jsonObjectSchema,
  finalText: z.string().optional(),
  /** The validated structured output of a run with an output schema. */
  output: jsonValueSchema.optional(),
  /** The version of the agent registry the run was resolved against. */
  registryVersion: z.number().int().nonnegative().optional(),
  createdAt: timestamp,
  updatedAt: timestamp,
});
/** A stored run; see {@link runRecordSchema}. */
export type RunRecord = z.infer<typeof runRecordSchema>;

/**
 * One tool call in the execution ledger. `in-flight` is written before the tool runs, `completed` (with the
 * result) after. `attempts` counts starts: more than one means the earlier attempt died mid-way.
 */
export const toolExecutionSchema = z.object({
  runId: z.string().min(1),
  toolCallId: z.string().min(1),
  threadId: z.string().min(1),
  toolName: z.string().min(1),
  /** Stable per tool call; the same on every re-run. */
  idempotencyKey: z.string().min(1),
  status: z.enum(['in-flight', 'completed']),
  result: toolResultSchema.optional(),
  attempts: z.number().int().positive(),
  startedAt: timestamp,
  completedAt: timestamp.optional(),
});
/** One entry of the execution ledger; see {@link toolExecutionSchema}. */
export type ToolExecution = z.infer<typeof toolExecutionSchema>;

/**
 * Everything one step changes, applied all-or-nothing: new messages appended after `expectedMessageCount`,
 * the run record (upserted), the thread state (replaced whole when given) and ledger entries (upserted; a
 * `completed` entry is final and stays as it is). Two ledger entries for one call (same `runId` and
 * `toolCallId`) in one commit are applied in order: the later wins, except that a `completed` one is final
 * (`ledgerEntriesToWrite` in `@lunation/contract/store-utils` does this; store-testkit checks it). A stale `expectedMessageCount` raises `store-conflict`; a
 * `leaseToken` below the thread's latest raises `stale-lease`, one above it (never issued) `lease-lost`; no
 * `leaseToken` while another writer holds the thread's unexpired lease raises `thread-busy`. In every case
 * nothing is written.
 *
 * @remarks Also `invalid-argument`, writing nothing: `run.identity.threadId` or a `toolExecutions[].threadId`
 * differs from `threadId`, the run id already belongs to another thread, or a ledger entry (same `runId` and
 * `toolCallId`) already belongs to another thread, or a message is not an object with a known `role` and a
 * `content` array. Stores check ids, counts, tokens, message roles and that values serialise to JSON; the
 * parts of messages and runs are the runtime's responsibility (it builds them from these schemas), so stores
 * need not re-validate them on this hot path. A run's position in
 * `listRuns` / `getLatestRun` is fixed by its first commit.
 */
export const checkpointCommitSchema = z.object({
  threadId: z.string().min(1),
  expectedMessageCount: z.number().int().nonnegative(),
  messages: z.array(messageSchema),
  run: runRecordSchema.optional(),
  threadState: jsonObjectSchema.optional(),
  toolExecutions: z.array(toolExecutionSchema).optional(),
  /**
   * The run that wrote `messages` (their `MessageRecord.runId`); it may be a run of another thread (a fork keeps
   * the original's runs on its copies). @default run?.identity.runId
   */
  runId: z.string().min(1).optional(),
  /** The fencing token of the writer's lease; omitted by writers that hold no lease (refused while one is held). */
  leaseToken: z.number().int().positive().optional(),
});
/** Everything one step changes; see {@link checkpointCommitSchema}. */
export type CheckpointCommit = z.infer<typeof checkpointCommitSchema>;

/** What a commit returns. */
export interface CheckpointResult {
  /** The thread's message count after the commit. */
  messageCount: number;
}

/** A thread with everything a run needs to start, read consistently. */
export interface ThreadCheckpoint {
  thread: ThreadRecord;
  messages: MessageRecord[];
  threadState: Record<string, unknown>;
  latestRun: RunRecord | undefined;
}

/**
 * A thread's lease: who holds it (a configured owner name and the live instance behind it), for which run, its
 * fencing token, when it was last taken or renewed and when it expires.
 */
export const leaseSchema = z.object({
  threadId: z.string().min(1),
  /** Who holds it: a name that may be configured, and so shared by several replicas or kept across restarts. */
  owner: z.string().min(1),
  /**
   * The live instance that holds it: a fresh random id per process start (per runtime instance), so two live
   * processes never share one even when they share an `owner`. Absent when the holder gave none.
   */
  incarnation: z.string().min(1).optional(),
  /** The run it was taken for. */
  runId: z.string().min(1),
  /** Fencing token: strictly increasing per thread across every acquisition. */
  token: z.number().int().positive(),
  /** When it was taken or last renewed (the store's clock): a holder that stopped renewing shows here. */
  renewedAt: timestamp,
  expiresAt: timestamp,
});
/** A thread's lease; see {@link leaseSchema}. */
export type Lease = z.infer<typeof leaseSchema>;

/** One page of a listing. */
export interface Page<T> {
  items: T[];
  /** Pass as `cursor` to get the next page; absent on the last page. */
  nextCursor?: string;
}

/** Filter and paging of {@link ThreadStore.listThreads}. */
export interface ListThreadsOptions {
  resourceId?: string;
  /** @default 50 */
  limit?: number;
  cursor?: string;
}

/** The range of {@link MessageStore.listMessages}. */
export interface ListMessagesOptions {
  /** First seq to return (inclusive). @default 1 */
  fromSeq?: number;
  /** Last seq to return (inclusive). */
  toSeq?: number;
  /** @default unlimited */
  limit?: number;
}

/** Paging of {@link RunStore.listRuns}. */
export interface ListRunsOptions {
  /** @default 50 */
  limit?: number;
  cursor?: string;
}

/** What {@link ThreadStore.createThread} takes. */
export interface CreateThreadInput {
  id: string;
  resourceId?: string;
  metadata?: Record<string, unknown>;
}

/** Threads: created explicitly, listed by owner (oldest first), deleted with everything in them. */
export interface ThreadStore {
  /** Creates a thread; `store-conflict` if the id exists. */
  createThread(input: CreateThreadInput): Promise<ThreadRecord>;
  /** The thread, or undefined when it does not exist. */
  getThread(threadId: string): Promise<ThreadRecord | undefined>;
  /** Threads ordered by creation time then id, filtered by `resourceId` when given. */
  listThreads(options?: ListThreadsOptions): Promise<Page<ThreadRecord>>;
  /** Replaces the metadata; `not-found` if the thread does not exist. */
  updateThreadMetadata(threadId: string, metadata: Record<string, unknown>): Promise<ThreadRecord>;
  /** Deletes the thread with its messages, runs, state, ledger entries and lease. False if it did not exist. */
  deleteThread(threadId: string): Promise<boolean>;
}

/** Messages are append-only, numbered 1, 2, 3, ... per thread. */
export interface MessageStore {
  /** Committed messages in seq order. */
  listMessages(threadId: string, options?: ListMessagesOptions): Promise<MessageRecord[]>;
}

/** Runs: upserted by commits, read by id or thread. */
export interface RunStore {
  /** The run, or undefined when it does not exist. */
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** The most recently created run of the thread. */
  getLatestRun(threadId: string): Promise<RunRecord | undefined>;
  /** Runs of a thread, oldest first. */
  listRuns(threadId: string, options?: ListRunsOptions): Promise<Page<RunRecord>>;
}

/** Thread-scoped state: replaced whole by commits. */
export interface ThreadStateStore {
  /** The thread-scoped state (`{}` for a thread without any). */
  getThreadState(threadId: string): Promise<Record<string, unknown>>;
}

/** Atomic step commits and consistent checkpoint reads. */
export interface CheckpointStore {
  /** Applies a step's changes atomically (see {@link CheckpointCommit}). */
  commit(commit: CheckpointCommit): Promise<CheckpointResult>;
  /** The thread, all its messages, its state and latest run in one consistent read; undefined if absent. */
  loadCheckpoint(threadId: string): Promise<ThreadCheckpoint | undefined>;
}

/** What {@link ToolExecutionLedger.completeToolExecution} takes. */
export interface CompleteToolExecutionInput {
  runId: string;
  toolCallId: string;
  result: ToolResult;
  leaseToken?: number;
}

/** What {@link LeaseManager.acquireLease} takes. */
export interface AcquireLeaseInput {
  threadId: string;
  /** Who takes it, e.g. a process id or a configured name. */
  owner: string;
  /** The live instance taking it (see `Lease.incarnation`); needed for any takeover of a held lease. */
  incarnation?: string;
  /** The run it is taken for. */
  runId: string;
  /** How long the lease lasts without a renewal; its holder renews it at least every third of this. */
  ttlMs: number;
}

/** What {@link LeaseManager.renewLease} takes. */
export interface RenewLeaseInput {
  threadId: string;
  token: number;
  ttlMs: number;
}

/** What {@link LeaseManager.releaseLease} takes. */
export interface ReleaseLeaseInput {
  threadId: string;
  token: number;
}

/** What {@link ToolExecutionLedger.beginToolExecution} takes. */
export interface BeginToolExecutionInput {
  runId: string;
  toolCallId: string;
  threadId: string;
  toolName: string;
  idempotencyKey: string;
  leaseToken?: number;
}

/** The tool-execution ledger: a side effect is never repeated once it completed. */
export interface ToolExecutionLedger {
  /**
   * Records a start. No entry: writes `in-flight` with `attempts: 1`. `in-flight`: increments `attempts`
   * (the earlier attempt died). `completed`: changes nothing. Returns the entry as it now is. An entry of
   * another thread (same `runId` and `toolCallId`) is `invalid-argument`.
   */
  beginToolExecution(input: BeginToolExecutionInput): Promise<ToolExecution>;
  /** Records the result; `not-found` when no entry was begun. Ledger entries do not require the thread to exist. */
  completeToolExecution(input: CompleteToolExecutionInput): Promise<ToolExecution>;
  /** The ledger entry of one tool call, or undefined. */
  getToolExecution(runId: string, toolCallId: string): Promise<ToolExecution | undefined>;
  /** The ledger entries of a run, in start order. */
  listToolExecutions(runId: string): Promise<ToolExecution[]>;
}

/** Thread leases: one active run per thread across processes. */
export interface LeaseManager {
  /**
   * Takes the thread's lease for `ttlMs`; the token is larger than any token issued for the thread before. While
   * an unexpired lease exists it fails with `thread-busy` (details: `runId`, `owner`, `incarnation`,
   * `renewedAt`, `expiresAt` of the held lease) unless one of the takeovers below applies, decided atomically
   * on the store's clock:
   * - the held lease has the caller's `owner` and `incarnation` (a lease this very instance left behind);
   * - the held lease has the caller's `owner`, another `incarnation`, and went unrenewed for three quarters of
   *   its time to live (`4 * (now - renewedAt) >= 3 * (expiresAt - renewedAt)`): its holder, which renews every
   *   third of it and counts its lease held only while confirmed less than three quarters of it ago (on its own
   *   clock, from when it sent the renewal), stopped, so it is gone (a restart with a stable owner name) or no
   *   longer acts on the lease (a replica stalled past it). Since specification v2; v1 took over after half.
   * A takeover issues a new token, so the previous holder's renewals fail (`lease-lost`) and its writes are
   * fenced (`stale-lease`).
   */
  acquireLease(input: AcquireLeaseInput): Promise<Lease>;
  /** Extends a held lease and sets `renewedAt`; `lease-lost` if it expired and was taken, or the token is not current. */
  renewLease(input: RenewLeaseInput): Promise<Lease>;
  /** Gives the lease up; false if the token no longer holds it (an expired lease nobody took still counts as held). */
  releaseLease(input: ReleaseLeaseInput): Promise<boolean>;
  /** The current unexpired lease, if any. */
  getLease(threadId: string): Promise<Lease | undefined>;
}

/**
 * Everything the runtime needs from a durable store. Every store passes `@lunation/store-testkit`.
 *
 * @remarks Rules the conformance suite checks, beyond each method's own description:
 * - Reads of a missing (or deleted) thread return empty values: `listMessages` → `[]`, `listRuns` →
 *   `{ items: [] }`, `getThreadState` → `{}`, `getLatestRun` and `getLease` → `undefined`.
 * - Runs are ordered by `createdAt`, ties going to the later insert (`getLatestRun`, `listRuns`).
 * - Cursors are keyset cursors: they survive inserts and deletes between pages; `nextCursor` is absent on the
 *   page holding the last item, even when that page is exactly full. A malformed cursor is `invalid-argument`.
 * - The per-thread lease token counter survives release, expiry and `deleteThread`; `renewLease` after
 *   `releaseLease` is `lease-lost`.
 * - A `leaseToken` is stale only when a higher token was issued for the thread, and the latest token still
 *   commits after its lease expired or was released, until the next `acquireLease`. So a read made before
 *   acquiring can miss a commit of the previous holder that lands in between; an `acquireLease` that returns
 *   orders every accepted commit of an earlier token before it, and a read after it sees them all: decide what
 *   to run (is this input applied, is this step done) from reads made after acquiring. A commit's token above
 *   the latest (never issued; on a thread never leased, any token) is `lease-lost`; a commit without a token
 *   while an unexpired lease is held is `thread-busy`. Ledger writes (`beginToolExecution`,
 *   `completeToolExecution`) check only for stale tokens.
 * - A commit checks, in order: the thread exists (`not-found`), the lease (`stale-lease`, `lease-lost`,
 *   `thread-busy`), the message count (`store-conflict`).
 * - Completing an already completed ledger entry returns it unchanged (the first result wins); a repeated
 *   `beginToolExecution` keeps the first `startedAt`.
 */
export interface LunationStore
  extends ThreadStore,
    MessageStore,
    RunStore,
    ThreadStateStore,
    CheckpointStore,
    ToolExecutionLedger,
    LeaseManager {
  /**
   * The version of this interface the store implements; the runtime refuses a store declaring another one
   * (`specification-mismatch`). See `specificationVersions`.
   */
  readonly specificationVersion: 'v2';
  /** A short name for diagnostics, e.g. `sqlite`. */
  readonly kind: string;
  /** Releases connections the store opened itself (injected clients are left open). */
  close(): Promise<void>;
}

/** The messages of a checkpoint, without their records. */
export function checkpointMessages(checkpoint: ThreadCheckpoint): Message[] {
  return checkpoint.messages.map((record) => record.message);
}
