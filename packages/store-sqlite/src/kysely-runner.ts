import { CompiledQuery, type Kysely, type QueryResult } from 'kysely';
import type { OperationRunner, SqliteOperation, Statement, Transaction } from './sqlite-operation.js';

// biome-ignore lint/suspicious/noExplicitAny: an application's Kysely of any schema
export type AnyKysely = Kysely<any>;

/**
 * Runs each operation on one connection of a Kysely instance (its driver queues other queries of that
 * instance meanwhile), bypassing the instance's plugins so rows come back exactly as SQLite returns them.
 *
 * @remarks Unlike `SyncRunner`, a transaction here spans `await`s; see the README for what that requires.
 */
export class KyselyRunner implements OperationRunner {
  readonly #db: AnyKysely;

  constructor(db: AnyKysely) {
    this.#db = db.withoutPlugins();
  }

  execute<T>(transaction: Transaction, operation: SqliteOperation<T>): Promise<T> {
    return this.#db.connection().execute(async (connection) => {
      if (transaction === 'none') return drive(connection, operation);
      await connection.executeQuery(CompiledQuery.raw(transaction === 'write' ? 'BEGIN IMMEDIATE' : 'BEGIN'));
      try {
        const result = await drive(connection, operation);
        await connection.executeQuery(CompiledQuery.raw('COMMIT'));
        return result;
      } catch (error) {
        try {
          await connection.executeQuery(CompiledQuery.raw('ROLLBACK'));
        } catch {
          // SQLite already rolled back (it does so itself after some errors).
        }
        throw error;
      }
    });
  }
}

/** Runs an operation's statements one by one on `connection` (a Kysely instance, connection or transaction). */
export async function drive<T>(connection: AnyKysely, operation: SqliteOperation<T>): Promise<T> {
  let step = operation.next();
  while (!step.done) {
    const statement: Statement = step.value;
    const result = await connection.executeQuery(CompiledQuery.raw(statement.sql, statement.parameters));
    step = operation.next(toStatementResult(statement, result));
  }
  return step.value;
}

/** Kysely's SQLite driver answers a statement that returns rows (SELECT, RETURNING) with `rows` only. */
function toStatementResult(statement: Statement, result: QueryResult<unknown>): unknown {
  if (statement.kind === 'get') return result.rows[0];
  if (statement.kind === 'all') return result.rows;
  return { changes: Number(result.numAffectedRows ?? 0n) };
}
