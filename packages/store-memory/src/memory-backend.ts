import type { JsonObject, Lease, MessageRecord, RunRecord, ToolExecution } from '@lunation/contract';

/**
 * A thread and everything stored under it. Values are the store's own deep copies (made as JSON would round-trip
 * them, see `copyJson`) and are copied again on the way out, so nothing aliases a caller's objects.
 */
export interface ThreadSlot {
  id: string;
  resourceId: string | undefined;
  metadata: JsonObject;
  messageCount: number;
  createdAt: number;
  updatedAt: number;
  /** Each MessageRecord; index `seq - 1`. */
  messages: MessageRecord[];
  /** The thread state, or undefined before the first commit that set one. */
  state: Record<string, unknown> | undefined;
  /** The thread's runs, sorted by `(createdAt, order)`. */
  runs: RunSlot[];
}

export interface RunSlot {
  runId: string;
  threadId: string;
  createdAt: number;
  /** Insertion number: breaks `createdAt` ties (first insert wins the earlier place). */
  order: number;
  record: RunRecord;
}

export interface LedgerSlot {
  threadId: string;
  startedAt: number;
  order: number;
  entry: ToolExecution;
}

export interface LeaseSlot {
  /** The highest token ever issued for the thread; never lowered (not by release, expiry or deleteThread). */
  highestToken: number;
  /** The last lease issued, kept after expiry (so its holder may renew it) until released or replaced. */
  lease: Lease | undefined;
}

/**
 * The data of one in-memory backend. Several MemoryStore instances built on the same backend see the same
 * data, as two processes see one database. Treat it as opaque: only MemoryStore reads and writes it.
 */
export class MemoryBackend {
  /** Threads by id. */
  readonly threads = new Map<string, ThreadSlot>();
  /** Every thread, sorted by `(createdAt, id)`. */
  readonly threadOrder: ThreadSlot[] = [];
  /** The threads of each resourceId, sorted by `(createdAt, id)`. */
  readonly threadsByResource = new Map<string, ThreadSlot[]>();
  /** Run records by runId. */
  readonly runs = new Map<string, RunSlot>();
  /** Ledger entries by runId, then toolCallId. */
  readonly ledger = new Map<string, Map<string, LedgerSlot>>();
  /** The runIds with ledger entries of each thread, so deleteThread finds them without a scan. */
  readonly ledgerRunsByThread = new Map<string, Set<string>>();
  /** Lease and fencing-token counter of each thread (threads need not exist to be leased). */
  readonly leases = new Map<string, LeaseSlot>();
  /** Source of insertion numbers. */
  sequence = 0;
}
