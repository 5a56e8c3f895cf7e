import {
  type AcquireLeaseInput,
  type BeginToolExecutionInput,
  type CheckpointCommit,
  type CheckpointResult,
  type CompleteToolExecutionInput,
  type CreateThreadInput,
  type JsonObject,
  type Lease,
  LunationError,
  type MessageRecord,
  type Page,
  type ReleaseLeaseInput,
  type RenewLeaseInput,
  type RunRecord,
  type ThreadCheckpoint,
  type ThreadRecord,
  type ToolExecution,
} from '@lunation/contract';
import {
  type CheckedListMessagesOptions,
  type CheckedListRunsOptions,
  type CheckedListThreadsOptions,
  leaseHeldElsewhere,
  ledgerEntryElsewhere,
  type StoreBackend,
  unissuedLeaseToken,
} from '@lunation/contract/store-utils';
import { copyJson } from './json-copy.js';
import type { LeaseSlot, LedgerSlot, MemoryBackend, RunSlot, ThreadSlot } from './memory-backend.js';
import { type Comparator, indexAfter, insertSorted, removeSorted } from './sorted-list.js';

const threadOrder: Comparator<ThreadSlot> = (a, b) => compareKeys(a.createdAt, a.id, b.createdAt, b.id);
const runOrder: Comparator<RunSlot> = (a, b) => compareKeys(a.createdAt, a.order, b.createdAt, b.order);

interface ThreadCursor {
  createdAt: number;
  id: string;
}

interface RunCursor {
  createdAt: number;
  order: number;
}

/**
 * The atomic operations of `MemoryStore` on a {@link MemoryBackend}'s data; `CheckedStore` checks their input
 * and the closed state first. Each runs without an await, so it is atomic against every other call.
 */
export class MemoryOperations implements StoreBackend {
  readonly kind = 'memory';
  readonly backend: MemoryBackend;
  private readonly now: () => number;

  constructor(backend: MemoryBackend, now: () => number) {
    this.backend = backend;
    this.now = now;
  }

  createThread(input: CreateThreadInput): ThreadRecord {
    const { threads, threadOrder: ordered, threadsByResource } = this.backend;
    if (threads.has(input.id)) {
      throw new LunationError(
        'store-conflict',
        `Thread "${input.id}" already exists; pick another id or load it`,
        {
          details: { threadId: input.id },
        },
      );
    }
    const metadata = toJson(input.metadata ?? {}) as JsonObject;
    const now = this.now();
    const slot: ThreadSlot = {
      id: input.id,
      resourceId: input.resourceId,
      metadata,
      messageCount: 0,
      createdAt: now,
      updatedAt: now,
      messages: [],
      state: undefined,
      runs: [],
    };
    threads.set(slot.id, slot);
    insertSorted(ordered, slot, threadOrder);
    if (slot.resourceId !== undefined) {
      let owned = threadsByResource.get(slot.resourceId);
      if (owned === undefined) {
        owned = [];
        threadsByResource.set(slot.resourceId, owned);
      }
      insertSorted(owned, slot, threadOrder);
    }
    return toThreadRecord(slot);
  }

  getThread(threadId: string): ThreadRecord | undefined {
    const slot = this.backend.threads.get(threadId);
    return slot === undefined ? undefined : toThreadRecord(slot);
  }

  listThreads(options: CheckedListThreadsOptions): Page<ThreadRecord> {
    const list =
      options.resourceId === undefined
        ? this.backend.threadOrder
        : (this.backend.threadsByResource.get(options.resourceId) ?? []);
    const { limit } = options;
    const start =
      options.cursor === undefined
        ? 0
        : indexAfter(list, decodeThreadCursor(options.cursor), (slot, key: ThreadCursor) =>
            compareKeys(slot.createdAt, slot.id, key.createdAt, key.id),
          );
    const slots = list.slice(start, start + limit);
    const last = slots.at(-1);
    const items = slots.map(toThreadRecord);
    if (last === undefined || start + limit >= list.length) return { items };
    return { items, nextCursor: encodeCursor({ createdAt: last.createdAt, id: last.id }) };
  }

  updateThreadMetadata(threadId: string, metadata: Record<string, unknown>): ThreadRecord {
    const slot = this.requireThread(threadId);
    slot.metadata = toJson(metadata) as JsonObject;
    slot.updatedAt = this.now();
    return toThreadRecord(slot);
  }

  deleteThread(threadId: string): boolean {
    const {
      threads,
      threadOrder: ordered,
      threadsByResource,
      runs,
      ledger,
      ledgerRunsByThread,
      leases,
    } = this.backend;
    const slot = threads.get(threadId);
    if (slot === undefined) return false;
    threads.delete(threadId);
    removeSorted(ordered, slot, threadOrder);
    if (slot.resourceId !== undefined) {
      const owned = threadsByResource.get(slot.resourceId);
      if (owned !== undefined) {
        removeSorted(owned, slot, threadOrder);
        if (owned.length === 0) threadsByResource.delete(slot.resourceId);
      }
    }
    for (const run of slot.runs) if (runs.get(run.runId) === run) runs.delete(run.runId);
    for (const runId of ledgerRunsByThread.get(threadId) ?? []) {
      const entries = ledger.get(runId);
      if (entries === undefined) continue;
      for (const [toolCallId, entry] of entries) if (entry.threadId === threadId) entries.delete(toolCallId);
      if (entries.size === 0) ledger.delete(runId);
    }
    ledgerRunsByThread.delete(threadId);
    const lease = leases.get(threadId);
    if (lease !== undefined) lease.lease = undefined;
    return true;
  }

  listMessages(threadId: string, options: CheckedListMessagesOptions): MessageRecord[] {
    const slot = this.backend.threads.get(threadId);
    if (slot === undefined) return [];
    const first = options.fromSeq;
    let last = Math.min(slot.messageCount, options.toSeq ?? slot.messageCount);
    if (options.limit !== undefined) last = Math.min(last, first + options.limit - 1);
    if (last < first) return [];
    return copyList(slot.messages.slice(first - 1, last));
  }

  getRun(runId: string): RunRecord | undefined {
    const slot = this.backend.runs.get(runId);
    return slot === undefined ? undefined : copyJson(slot.record);
  }

  getLatestRun(threadId: string): RunRecord | undefined {
    const latest = this.backend.threads.get(threadId)?.runs.at(-1);
    return latest === undefined ? undefined : copyJson(latest.record);
  }

  listRuns(threadId: string, options: CheckedListRunsOptions): Page<RunRecord> {
    const list = this.backend.threads.get(threadId)?.runs ?? [];
    const { limit } = options;
    const start =
      options.cursor === undefined
        ? 0
        : indexAfter(list, decodeRunCursor(options.cursor), (slot, key: RunCursor) =>
            compareKeys(slot.createdAt, slot.order, key.createdAt, key.order),
          );
    const slots = list.slice(start, start + limit);
    const last = slots.at(-1);
    const items = slots.map((slot) => copyJson(slot.record));
    if (last === undefined || start + limit >= list.length) return { items };
    return { items, nextCursor: encodeCursor({ createdAt: last.createdAt, order: last.order }) };
  }

  getThreadState(threadId: string): Record<string, unknown> {
    const state = this.backend.threads.get(threadId)?.state;
    return state === undefined ? {} : copyJson(state);
  }

  commit(commit: CheckpointCommit): CheckpointResult {
    const { threadId } = commit;
    const slot = this.requireThread(threadId);
    this.assertCommitLease(threadId, commit.leaseToken);
    if (commit.expectedMessageCount !== slot.messageCount) {
      throw new LunationError(
        'store-conflict',
        `Thread "${threadId}" has ${slot.messageCount} messages but the commit expected ${commit.expectedMessageCount}; reload the checkpoint and apply the step again`,
        {
          details: {
            threadId,
            expectedMessageCount: commit.expectedMessageCount,
            messageCount: slot.messageCount,
          },
        },
      );
    }

    const { run, toolExecutions } = commit;
    const runId = run?.identity.runId;
    const owner = runId === undefined ? undefined : this.backend.runs.get(runId)?.threadId;
    if (owner !== undefined && owner !== threadId) {
      throw new LunationError(
        'invalid-argument',
        `Invalid commit: run "${runId}" already belongs to thread "${owner}", not "${threadId}"`,
      );
    }
    if (toolExecutions !== undefined) this.assertLedgerThread(toolExecutions, threadId);

    // Copy everything before touching the backend, so a value that cannot be stored writes nothing.
    const now = this.now();
    const messages = toMessageRecords(
      commit.messages,
      slot.messageCount,
      commit.runId ?? runId,
      threadId,
      now,
    );
    const storedRun = run === undefined ? undefined : toJson(run);
    const state = commit.threadState === undefined ? undefined : toJson(commit.threadState);
    const entries = toolExecutions === undefined ? undefined : toJson(toolExecutions);

    for (let index = 0; index < messages.length; index++) slot.messages.push(messages[index]!);
    slot.messageCount += messages.length;
    slot.updatedAt = now;
    if (state !== undefined) slot.state = state;
    if (storedRun !== undefined) this.upsertRun(slot, storedRun);
    if (entries !== undefined) {
      for (let index = 0; index < entries.length; index++) this.upsertLedgerEntry(entries[index]!);
    }
    return { messageCount: slot.messageCount };
  }

  loadCheckpoint(threadId: string): ThreadCheckpoint | undefined {
    const slot = this.backend.threads.get(threadId);
    if (slot === undefined) return undefined;
    const latest = slot.runs.at(-1);
    return {
      thread: toThreadRecord(slot),
      messages: copyList(slot.messages),
      threadState: slot.state === undefined ? {} : copyJson(slot.state),
      latestRun: latest === undefined ? undefined : copyJson(latest.record),
    };
  }

  beginToolExecution(input: BeginToolExecutionInput): ToolExecution {
    this.assertFreshLease(input.threadId, input.leaseToken);
    const existing = this.backend.ledger.get(input.runId)?.get(input.toolCallId);
    if (existing !== undefined && existing.threadId !== input.threadId) {
      throw ledgerEntryElsewhere(input.runId, input.toolCallId, existing.threadId);
    }
    if (existing === undefined) {
      const entry: ToolExecution = {
        runId: input.runId,
        toolCallId: input.toolCallId,
        threadId: input.threadId,
        toolName: input.toolName,
        idempotencyKey: input.idempotencyKey,
        status: 'in-flight',
        attempts: 1,
        startedAt: this.now(),
      };
      this.upsertLedgerEntry(entry);
      return copyJson(entry);
    }
    if (existing.entry.status === 'completed') return copyJson(existing.entry);
    existing.entry.attempts += 1;
    return copyJson(existing.entry);
  }

  completeToolExecution(input: CompleteToolExecutionInput): ToolExecution {
    const existing = this.backend.ledger.get(input.runId)?.get(input.toolCallId);
    if (existing === undefined) {
      throw new LunationError(
        'not-found',
        `Tool call "${input.toolCallId}" of run "${input.runId}" was never begun; call beginToolExecution first`,
        { details: { runId: input.runId, toolCallId: input.toolCallId } },
      );
    }
    this.assertFreshLease(existing.threadId, input.leaseToken);
    if (existing.entry.status === 'completed') return copyJson(existing.entry);
    existing.entry = toJson({
      ...existing.entry,
      status: 'completed',
      result: input.result,
      completedAt: this.now(),
    });
    return copyJson(existing.entry);
  }

  getToolExecution(runId: string, toolCallId: string): ToolExecution | undefined {
    const slot = this.backend.ledger.get(runId)?.get(toolCallId);
    return slot === undefined ? undefined : copyJson(slot.entry);
  }

  listToolExecutions(runId: string): ToolExecution[] {
    const entries = this.backend.ledger.get(runId);
    if (entries === undefined) return [];
    const slots = [...entries.values()].sort((a, b) =>
      compareKeys(a.startedAt, a.order, b.startedAt, b.order),
    );
    return slots.map((slot) => copyJson(slot.entry));
  }

  acquireLease(input: AcquireLeaseInput): Lease {
    const now = this.now();
    const slot = this.leaseSlot(input.threadId);
    const active = slot.lease;
    if (active !== undefined && active.expiresAt > now && !mayTakeOver(active, input, now)) {
      throw new LunationError(
        'thread-busy',
        `Thread "${input.threadId}" already has an active run (run ${active.runId}); wait for it or cancel it`,
        {
          details: {
            threadId: input.threadId,
            runId: active.runId,
            owner: active.owner,
            incarnation: active.incarnation,
            renewedAt: active.renewedAt,
            expiresAt: active.expiresAt,
          },
        },
      );
    }
    slot.highestToken += 1;
    const lease: Lease = {
      threadId: input.threadId,
      owner: input.owner,
      ...(input.incarnation === undefined ? {} : { incarnation: input.incarnation }),
      runId: input.runId,
      token: slot.highestToken,
      renewedAt: now,
      expiresAt: now + input.ttlMs,
    };
    slot.lease = lease;
    return { ...lease };
  }

  renewLease(input: RenewLeaseInput): Lease {
    const slot = this.backend.leases.get(input.threadId);
    const held = slot?.lease;
    if (
      slot === undefined ||
      held === undefined ||
      held.token !== input.token ||
      slot.highestToken !== input.token
    ) {
      const current = slot?.highestToken ?? 0;
      throw new LunationError(
        'lease-lost',
        `The lease on thread "${input.threadId}" with token ${input.token} is no longer held (${
          held === undefined ? 'it was released or never taken' : `token ${current} was issued since`
        }); stop the run and start it again`,
        { details: { threadId: input.threadId, token: input.token, currentToken: current } },
      );
    }
    const now = this.now();
    const lease: Lease = { ...held, renewedAt: now, expiresAt: now + input.ttlMs };
    slot.lease = lease;
    return { ...lease };
  }

  releaseLease(input: ReleaseLeaseInput): boolean {
    const slot = this.backend.leases.get(input.threadId);
    if (slot?.lease === undefined || slot.lease.token !== input.token) return false;
    slot.lease = undefined;
    return true;
  }

  getLease(threadId: string): Lease | undefined {
    const lease = this.backend.leases.get(threadId)?.lease;
    return lease === undefined || lease.expiresAt <= this.now() ? undefined : { ...lease };
  }

  async close(): Promise<void> {}

  toStoreError(error: unknown): LunationError {
    return new LunationError('internal', `MemoryStore failed: ${String(error)}`, { cause: error });
  }

  private requireThread(threadId: string): ThreadSlot {
    const slot = this.backend.threads.get(threadId);
    if (slot === undefined) {
      throw new LunationError('not-found', `Thread "${threadId}" does not exist; create it first`, {
        details: { threadId },
      });
    }
    return slot;
  }

  private leaseSlot(threadId: string): LeaseSlot {
    let slot = this.backend.leases.get(threadId);
    if (slot === undefined) {
      slot = { highestToken: 0, lease: undefined };
      this.backend.leases.set(threadId, slot);
    }
    return slot;
  }

  /** A commit's fence: its token is the latest issued, or it has none and no one holds a live lease. */
  private assertCommitLease(threadId: string, leaseToken: number | undefined): void {
    const leases = this.backend.leases.get(threadId);
    if (leaseToken === undefined) {
      const held = leases?.lease;
      if (held !== undefined && held.expiresAt > this.now()) {
        throw leaseHeldElsewhere(threadId, {
          owner: held.owner,
          runId: held.runId,
          expiresAt: held.expiresAt,
        });
      }
      return;
    }
    this.assertFreshLease(threadId, leaseToken);
    const latest = leases?.highestToken ?? 0;
    if (leaseToken > latest) throw unissuedLeaseToken(threadId, leaseToken, latest);
  }

  private assertFreshLease(threadId: string, leaseToken: number | undefined): void {
    if (leaseToken === undefined) return;
    const highest = this.backend.leases.get(threadId)?.highestToken ?? 0;
    if (leaseToken < highest) {
      throw new LunationError(
        'stale-lease',
        `A write to thread "${threadId}" carried lease token ${leaseToken}, but token ${highest} was issued since; the writer lost its lease and must stop`,
        { details: { threadId, leaseToken, currentToken: highest } },
      );
    }
  }

  /** Throws unless every entry is new to the ledger or already belongs to `threadId`. */
  private assertLedgerThread(entries: readonly ToolExecution[], threadId: string): void {
    const ledger = this.backend.ledger;
    for (let index = 0; index < entries.length; index++) {
      const { runId, toolCallId } = entries[index]!;
      const existing = ledger.get(runId)?.get(toolCallId);
      if (existing !== undefined && existing.threadId !== threadId) {
        throw ledgerEntryElsewhere(runId, toolCallId, existing.threadId);
      }
    }
  }

  private upsertRun(thread: ThreadSlot, run: RunRecord): void {
    const { runs, threads } = this.backend;
    const runId = run.identity.runId;
    const existing = runs.get(runId);
    if (existing !== undefined && existing.threadId === thread.id && existing.createdAt === run.createdAt) {
      existing.record = run;
      return;
    }
    if (existing !== undefined) {
      const owner = threads.get(existing.threadId);
      if (owner !== undefined) removeSorted(owner.runs, existing, runOrder);
    }
    const slot: RunSlot = {
      runId,
      threadId: thread.id,
      createdAt: run.createdAt,
      order: existing?.order ?? ++this.backend.sequence,
      record: run,
    };
    runs.set(runId, slot);
    insertSorted(thread.runs, slot, runOrder);
  }

  private upsertLedgerEntry(entry: ToolExecution): void {
    const { ledger, ledgerRunsByThread } = this.backend;
    let entries = ledger.get(entry.runId);
    if (entries === undefined) {
      entries = new Map<string, LedgerSlot>();
      ledger.set(entry.runId, entries);
    }
    const existing = entries.get(entry.toolCallId);
    if (existing !== undefined) {
      // Callers checked that the entry stays in its thread, so the thread's index of runs already has it.
      if (existing.entry.status === 'completed') return; // a completed entry is final
      existing.startedAt = entry.startedAt;
      existing.entry = entry;
      return;
    }
    entries.set(entry.toolCallId, {
      threadId: entry.threadId,
      startedAt: entry.startedAt,
      order: ++this.backend.sequence,
      entry,
    });
    let runIds = ledgerRunsByThread.get(entry.threadId);
    if (runIds === undefined) {
      runIds = new Set<string>();
      ledgerRunsByThread.set(entry.threadId, runIds);
    }
    runIds.add(entry.runId);
  }
}

function compareKeys(
  firstTime: number,
  firstTie: string | number,
  secondTime: number,
  secondTie: string | number,
): number {
  if (firstTime !== secondTime) return firstTime - secondTime;
  return firstTie < secondTie ? -1 : firstTie > secondTie ? 1 : 0;
}

function toThreadRecord(slot: ThreadSlot): ThreadRecord {
  return {
    id: slot.id,
    ...(slot.resourceId === undefined ? {} : { resourceId: slot.resourceId }),
    metadata: copyJson(slot.metadata),
    messageCount: slot.messageCount,
    createdAt: slot.createdAt,
    updatedAt: slot.updatedAt,
  };
}

/** The store's records of messages committed together: copies of the messages, numbered from `count + 1`. */
function toMessageRecords(
  messages: readonly unknown[],
  count: number,
  runId: string | undefined,
  threadId: string,
  createdAt: number,
): MessageRecord[] {
  const records = new Array<MessageRecord>(messages.length);
  for (let index = 0; index < messages.length; index++) {
    const message = toJson(messages[index]) as MessageRecord['message'];
    const seq = count + index + 1;
    records[index] =
      runId === undefined
        ? { threadId, seq, message, createdAt }
        : { threadId, seq, message, runId, createdAt };
  }
  return records;
}

/** The store's own copy of a value, as JSON would round-trip it; `invalid-argument` for values JSON cannot hold. */
function toJson<T>(value: T): T {
  try {
    return copyJson(value);
  } catch (error) {
    throw new LunationError('invalid-argument', 'A value could not be stored as JSON; pass plain JSON data', {
      cause: error,
    });
  }
}

function copyList<T>(items: readonly T[]): T[] {
  return items.map((item) => copyJson(item));
}

/** Whether `input` may take over the unexpired lease `held` (the contract's two takeovers). */
function mayTakeOver(held: Lease, input: AcquireLeaseInput, now: number): boolean {
  if (held.owner !== input.owner || held.incarnation === undefined || input.incarnation === undefined) {
    return false;
  }
  return (
    held.incarnation === input.incarnation ||
    4 * (now - held.renewedAt) >= 3 * (held.expiresAt - held.renewedAt)
  );
}

function encodeCursor(key: ThreadCursor | RunCursor): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(JSON.stringify(key))) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replaceAll('=', '');
}

function decodeCursor(cursor: string): Record<string, unknown> | undefined {
  try {
    const binary = atob(cursor.replaceAll('-', '+').replaceAll('_', '/'));
    const bytes = Uint8Array.from(binary, (character) => character.charCodeAt(0));
    const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function invalidCursor(cursor: string): LunationError {
  return new LunationError(
    'invalid-argument',
    `"${cursor}" is not a cursor of this list; pass the nextCursor of the previous page`,
    { details: { cursor } },
  );
}

function decodeThreadCursor(cursor: string): ThreadCursor {
  const value = decodeCursor(cursor);
  if (typeof value?.createdAt !== 'number' || typeof value.id !== 'string') throw invalidCursor(cursor);
  return { createdAt: value.createdAt, id: value.id };
}

function decodeRunCursor(cursor: string): RunCursor {
  const value = decodeCursor(cursor);
  if (typeof value?.createdAt !== 'number' || typeof value.order !== 'number') throw invalidCursor(cursor);
  return { createdAt: value.createdAt, order: value.order };
}
