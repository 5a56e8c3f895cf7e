/** What a statement answers: `run` the number of changed rows, `get` the first row, `all` every row. */
export type StatementKind = 'run' | 'get' | 'all';

/** One SQL statement an operation asks its runner to execute. */
export interface Statement {
  readonly sql: string;
  readonly parameters: unknown[];
  readonly kind: StatementKind;
}

export interface RunResult {
  changes: number;
}

/**
 * A store operation, written once for every runner: it yields its statements in order and receives each
 * one's result, so the same code runs synchronously over prepared statements or asynchronously over Kysely.
 */
export type SqliteOperation<T> = Generator<Statement, T, unknown>;

/** How a runner wraps an operation: one `BEGIN IMMEDIATE` transaction, one read transaction, or none. */
export type Transaction = 'write' | 'read' | 'none';

/** Executes operations against one database connection. */
export interface OperationRunner {
  /** Runs `operation` (a generator not yet started) to completion inside `transaction`. */
  execute<T>(transaction: Transaction, operation: SqliteOperation<T>): T | Promise<T>;
}

/** A statement with its SQL fixed: call it with the parameters and `yield*` the call for the result. */
export interface StatementDefinition<Result> {
  (parameters: unknown[]): SqliteOperation<Result>;
  readonly sql: string;
}

function define<Result>(sql: string, kind: StatementKind): StatementDefinition<Result> {
  function* statement(parameters: unknown[]): SqliteOperation<Result> {
    return (yield { sql, parameters, kind }) as Result;
  }
  return Object.assign(statement, { sql });
}

/** A statement run for its effect; answers `{ changes }`. */
export function runStatement(sql: string): StatementDefinition<RunResult> {
  return define(sql, 'run');
}

/** A statement that answers its first row, or `undefined`. */
export function getStatement<Row>(sql: string): StatementDefinition<Row | undefined> {
  return define(sql, 'get');
}

/** A statement that answers all its rows. */
export function allStatement<Row>(sql: string): StatementDefinition<Row[]> {
  return define(sql, 'all');
}
