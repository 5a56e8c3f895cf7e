import type { DispatchClaim, ErrorInfo, InboxEntry, Submission } from '@lunation/contract';
import type { ResolvedDispatchPolicy } from '@lunation/contract/dispatch-utils';
import type { LineSlot } from './local-ready-line.js';

/** One thread of a local dispatch backend: its inbox, where its job is, and its failures. */
export interface ThreadSlot {
  threadId: string;
  /** The tenant of the submission that last woke the thread. */
  resourceId: string | undefined;
  entries: InboxEntry[];
  /** Pending submission ids. */
  pendingIds: Set<string>;
  /** Acknowledged submission ids, with when, for the dedupe window. */
  acknowledged: Map<string, number>;
  state: LineSlot['state'];
  /** Failed attempts since the thread last completed. */
  failures: number;
  /** For `delayed`: when it becomes claimable. */
  readyAt: number;
  claim: ClaimSlot | undefined;
  dead: { error: ErrorInfo; at: number; attempts: number } | undefined;
}

/** A claim held on a thread. */
export interface ClaimSlot {
  claim: DispatchClaim;
  slot: ThreadSlot;
  expiresAt: number;
  /** The lock the claim was made with: `extend` without `lockMs` keeps it. */
  lockMs: number;
  /** The dispatcher instance that made it (to hand it back on close). */
  owner: object;
}

/** A claim call waiting for a thread. */
export interface ClaimWaiter {
  workerId: string;
  lockMs: number;
  policy: ResolvedDispatchPolicy;
  owner: object;
  settle(claim: ClaimSlot | undefined): void;
}

/** The slot of a thread the backend has not seen yet (or forgot). */
export function newThreadSlot(submission: Submission): ThreadSlot {
  return {
    threadId: submission.threadId,
    resourceId: submission.resourceId,
    entries: [],
    pendingIds: new Set(),
    acknowledged: new Map(),
    state: 'idle',
    failures: 0,
    readyAt: 0,
    claim: undefined,
    dead: undefined,
  };
}
