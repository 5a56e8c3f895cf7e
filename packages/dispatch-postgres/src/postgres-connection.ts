/** A result as node-postgres returns it: rows as objects. */
export interface PostgresQueryResult {
  // biome-ignore lint/suspicious/noExplicitAny: rows of any query, as node-postgres types them
  rows: any[];
  rowCount?: number | null;
}

/** A notification a LISTENing connection receives. */
export interface PostgresNotification {
  channel: string;
  payload?: string;
}

/**
 * The part of a pg pool client the dispatcher uses: queries, release, and for its one listening connection
 * `notification` and `error` events. A `pg.PoolClient` fits.
 */
export interface PostgresDispatcherClient {
  /** Runs a statement with `$1`-style parameters (or several, without parameters). */
  query(text: string, values?: unknown[]): Promise<PostgresQueryResult>;
  /** Returns the connection to the pool; with an error, the pool ends it instead. */
  release(error?: Error | boolean): void;
  /** Listens for LISTEN notifications (on the listening connection). */
  on(event: 'notification', listener: (message: PostgresNotification) => void): unknown;
  /** Listens for the connection's errors (a lost connection). */
  on(event: 'error', listener: (error: Error) => void): unknown;
  /** Stops listening. */
  removeListener(event: 'notification' | 'error', listener: (...args: never[]) => void): unknown;
}

/** The part of a pg `Pool` the dispatcher uses. A `pg.Pool` fits. */
export interface PostgresDispatcherPool {
  /** Checks a client out of the pool (for transactions, migrations and the listening connection). */
  connect(): Promise<PostgresDispatcherClient>;
  /** Runs one statement on any connection of the pool. */
  query(text: string, values?: unknown[]): Promise<PostgresQueryResult>;
}

/** What pg-boss takes as `db`: it runs its statements through it (in our transaction when given one). */
export interface BossDatabase {
  executeSql(text: string, values?: unknown[]): Promise<PostgresQueryResult>;
}

/** One transaction on one connection; notifications are sent just before it commits. */
export class Transaction {
  readonly #client: PostgresDispatcherClient;
  readonly #notifications = new Map<string, string>();
  /** pg-boss's view of this transaction: its statements join it. */
  readonly boss: BossDatabase;

  constructor(client: PostgresDispatcherClient) {
    this.#client = client;
    this.boss = { executeSql: (text, values) => client.query(text, values) };
  }

  query(text: string, values?: unknown[]): Promise<PostgresQueryResult> {
    return this.#client.query(text, values);
  }

  /** NOTIFY `channel` once this transaction commits (repeats of one channel and payload are sent once). */
  notify(channel: string, payload = ''): void {
    this.#notifications.set(`${channel}\0${payload}`, channel);
  }

  /** Sends the queued notifications inside the transaction; PostgreSQL delivers them at COMMIT. */
  async flush(): Promise<void> {
    if (this.#notifications.size === 0) return;
    const channels: string[] = [];
    const payloads: string[] = [];
    for (const [key, channel] of this.#notifications) {
      channels.push(channel);
      payloads.push(key.slice(channel.length + 1));
    }
    this.#notifications.clear();
    await this.#client.query('SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS n(c, p)', [
      channels,
      payloads,
    ]);
  }
}

/** Thrown inside a transaction to roll it back and resolve the transaction with `value`. */
export class Rollback<T> {
  constructor(readonly value: T) {}
}

/**
 * Runs `work` in one transaction on a connection of `pool`: COMMIT when it resolves, ROLLBACK when it throws
 * (a thrown {@link Rollback} resolves with its value). A connection whose ROLLBACK fails is ended, not reused.
 */
export async function inTransaction<T>(
  pool: PostgresDispatcherPool,
  work: (transaction: Transaction) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    try {
      const transaction = new Transaction(client);
      const result = await work(transaction);
      await transaction.flush();
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      if (error instanceof Rollback) return error.value as T;
      throw error;
    }
  } catch (error) {
    broken ??= error instanceof Error && isConnectionFailure(error) ? error : undefined;
    throw error;
  } finally {
    client.release(broken ?? false);
  }
}

function isConnectionFailure(error: Error): boolean {
  return /Connection terminated|ECONNRESET|EPIPE|connection error/i.test(error.message);
}
