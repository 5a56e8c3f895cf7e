import type { ToolExecution } from './store.js';
import type { ToolResult } from './tools.js';

/** What {@link TransactionalToolEffects.completeToolExecutionWithEffect} takes. */
export interface ToolEffectInput {
  runId: string;
  /** The ledger's id of the call (its `toolCallIdentity`). */
  toolCallId: string;
  leaseToken?: number;
  /**
   * Aborted by the caller when it gives up on the call (it timed out, or its run was cancelled) before the
   * effect returned. The transaction then rolls back at once, without waiting for the effect, and the call
   * rejects with the signal's `reason`, writing nothing; every statement the effect runs on the transaction
   * afterwards fails with that reason. Once the effect has returned, its completion commits.
   */
  signal?: AbortSignal;
}

/**
 * A store that can write a tool's effect in its own database in the same transaction as the call's ledger
 * completion, so the effect happens exactly once whatever instant the process dies. `SqliteStore` and
 * `PostgresStore` implement it (the transaction is a kysely `Transaction`); stores that cannot, don't.
 */
export interface TransactionalToolEffects {
  /**
   * Opens a transaction on the store's database and checks that the call's ledger entry is `in-flight` and the
   * lease token fresh (`not-found`, `stale-lease`); runs `effect` with the transaction; records the result it
   * returns as the entry's completion; commits both at once. When `effect` throws, nothing is written and the
   * error is rethrown. When the entry is already `completed`, `effect` does not run and the entry is returned
   * as it is. When `input.signal` aborts first, nothing is written (see {@link ToolEffectInput.signal}).
   * Returns the completed entry.
   */
  completeToolExecutionWithEffect(
    input: ToolEffectInput,
    effect: (transaction: unknown) => Promise<ToolResult>,
  ): Promise<ToolExecution>;
}

/** True when `store` can commit a tool's effect with its ledger completion (see {@link TransactionalToolEffects}). */
export function supportsToolEffects<Store extends object>(
  store: Store,
): store is Store & TransactionalToolEffects {
  return typeof (store as Partial<TransactionalToolEffects>).completeToolExecutionWithEffect === 'function';
}
