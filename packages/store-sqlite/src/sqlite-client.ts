import type { SqliteStatement as KyselySqliteStatement, SqliteDatabase } from 'kysely';

/** The part of a better-sqlite3 statement the store uses. */
export interface SqliteStatement extends KyselySqliteStatement {
  /** The first row, or undefined. */
  get(parameters: ReadonlyArray<unknown>): unknown;
  /** Runs the statement; how many rows changed. */
  run(parameters: ReadonlyArray<unknown>): { changes: number; lastInsertRowid: number | bigint };
}

/** The part of a better-sqlite3 `Database` the store uses. */
export interface SqliteClient extends SqliteDatabase {
  /** A prepared statement. */
  prepare(sql: string): SqliteStatement;
}
