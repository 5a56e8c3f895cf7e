import { LunationError } from '@lunation/contract';

/** One row a tool's transactional effect wrote, with the call whose completion committed it. */
export interface SimulatedRow {
  /** What makes two rows the same effect (a booking's idempotency key). */
  key: string;
  runId: string;
  toolCallId: string;
}

/**
 * The table a {@link SimulatedStore}'s transactional tool effects write into: the simulated store's own
 * database, so a row commits with the call's ledger completion or not at all. `inserts` counts every row ever
 * committed per key (a key committed twice is an effect that happened twice).
 */
export class SimulatedDatabase {
  /** The committed rows, by key (the latest one). */
  readonly rows = new Map<string, SimulatedRow>();
  /** How many times a row of each key was committed. */
  readonly inserts = new Map<string, number>();

  /** Commits staged rows (a transaction that committed). @internal */
  apply(rows: readonly SimulatedRow[]): void {
    for (const row of rows) {
      this.rows.set(row.key, row);
      this.inserts.set(row.key, (this.inserts.get(row.key) ?? 0) + 1);
    }
  }
}

/**
 * The transaction a transactional effect gets from a {@link SimulatedStore}: rows it inserts are staged and
 * commit with the call's ledger completion; once the transaction is over (rolled back, or the caller gave up)
 * every further insert fails with `cancelled`.
 */
export class SimulatedTransaction {
  private readonly staged: SimulatedRow[] = [];
  private open = true;

  constructor(
    private readonly runId: string,
    private readonly toolCallId: string,
  ) {}

  /** Stages a row of `key`. */
  insert(key: string): void {
    if (!this.open) {
      throw new LunationError(
        'cancelled',
        `The transaction of call ${this.toolCallId} is over; nothing was written`,
      );
    }
    this.staged.push({ key, runId: this.runId, toolCallId: this.toolCallId });
  }

  /** Ends the transaction and returns what it staged. @internal */
  close(): SimulatedRow[] {
    this.open = false;
    return this.staged.splice(0);
  }
}
