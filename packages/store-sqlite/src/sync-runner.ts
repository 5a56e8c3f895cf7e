import type { SqliteClient, SqliteStatement } from './sqlite-client.js';
import type { OperationRunner, SqliteOperation, Transaction } from './sqlite-operation.js';

/**
 * Runs each operation to completion synchronously over cached better-sqlite3 prepared statements: nothing
 * else of this process runs while its transaction is open, so it never holds a lock across an `await`.
 */
export class SyncRunner implements OperationRunner {
  readonly #client: SqliteClient;
  readonly #prepared = new Map<string, SqliteStatement>();
  readonly #begin: SqliteStatement;
  readonly #beginImmediate: SqliteStatement;
  readonly #commit: SqliteStatement;
  readonly #rollback: SqliteStatement;

  /** Prepares `statements` up front, so one that does not compile fails here rather than mid-operation. */
  constructor(client: SqliteClient, statements: Iterable<{ readonly sql: string }>) {
    this.#client = client;
    this.#begin = client.prepare('BEGIN');
    this.#beginImmediate = client.prepare('BEGIN IMMEDIATE');
    this.#commit = client.prepare('COMMIT');
    this.#rollback = client.prepare('ROLLBACK');
    for (const statement of statements) this.#prepare(statement.sql);
  }

  execute<T>(transaction: Transaction, operation: SqliteOperation<T>): T {
    if (transaction === 'none') return this.#drive(operation);
    (transaction === 'write' ? this.#beginImmediate : this.#begin).run([]);
    try {
      const result = this.#drive(operation);
      this.#commit.run([]);
      return result;
    } catch (error) {
      try {
        this.#rollback.run([]);
      } catch {
        // SQLite already rolled back (it does so itself after some errors).
      }
      throw error;
    }
  }

  #drive<T>(operation: SqliteOperation<T>): T {
    let step = operation.next();
    while (!step.done) {
      const { sql, parameters, kind } = step.value;
      const statement = this.#prepared.get(sql) ?? this.#prepare(sql);
      let result: unknown;
      if (kind === 'run') result = statement.run(parameters);
      else if (kind === 'get') result = statement.get(parameters);
      else result = statement.all(parameters);
      step = operation.next(result);
    }
    return step.value;
  }

  #prepare(sql: string): SqliteStatement {
    const statement = this.#client.prepare(sql);
    this.#prepared.set(sql, statement);
    return statement;
  }
}
