import { LunationError } from '../errors.js';

/** The SQLSTATE of a PostgreSQL error (or a Node.js error code such as `ECONNREFUSED`). */
export function postgresErrorCode(error: unknown): string | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** How {@link toPostgresError} names what failed. */
export interface PostgresErrorContext {
  /** What the adapter is, for the advice: `store` or `dispatcher`. */
  adapter: string;
  /** The call that failed, e.g. `submit`. @default 'call' */
  operation?: string;
  /** The pool's last error of its own (an idle connection lost), named when the server is unavailable. */
  connectionError?: unknown;
}

// Classes 08 (connection), 53 (resources), 57P (operator intervention), 58 (system): try again later.
const retryableStates = /^(08|53|57P|58)/;
// 22021 (a NUL or invalid byte in a string), 22P02 / 22P05 (JSON PostgreSQL cannot store: \u0000, a lone
// surrogate), 22003 (a number out of range), 54000 (a value too long): the input is the problem.
const invalidInputStates = /^(22021|22P02|22P05|22003|54000)$/;
// Serialisation failure, deadlock, lock not available: a concurrent transaction won.
const concurrencyStates = /^(40001|40P01|55P03)$/;
// No schema, no table, no function: the schema is not (fully) migrated.
const missingSchemaStates = /^(3F000|42P01|42883)$/;
const networkErrors =
  /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)$/;
const connectionMessages =
  /Connection terminated|connection timeout|Client has encountered a connection error|timeout exceeded when trying to connect/i;
const closedPoolMessages =
  /pool after calling end|Cannot use a pool after|Client was closed|Database not opened/i;

/**
 * Maps anything a PostgreSQL driver threw to the contract's error by its SQLSTATE (and node-postgres'
 * connection messages); LunationErrors pass through unchanged. Bad input is `invalid-argument`; a lost race
 * with a concurrent transaction and an unreachable server are retryable `store-unavailable`; a schema that
 * is missing or a closed pool are `store-unavailable`, not retryable; anything else is `internal`.
 */
export function toPostgresError(error: unknown, context: PostgresErrorContext): LunationError {
  if (LunationError.isInstance(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  const code = postgresErrorCode(error);
  const { adapter } = context;
  const operation = context.operation ?? 'call';
  if (code !== undefined && invalidInputStates.test(code)) {
    return new LunationError(
      'invalid-argument',
      `PostgreSQL cannot store this value (${code}): ${message}; ids, strings and JSON must not contain NUL (\\u0000) characters or lone surrogates`,
      { cause: error },
    );
  }
  if (code !== undefined && concurrencyStates.test(code)) {
    return new LunationError(
      'store-unavailable',
      `PostgreSQL aborted the ${adapter}'s ${operation} (${code}: ${message}) because of a concurrent transaction; nothing was written, retry it`,
      { cause: error, retryable: true },
    );
  }
  if (
    (code !== undefined && (retryableStates.test(code) || networkErrors.test(code))) ||
    connectionMessages.test(message)
  ) {
    const earlier =
      context.connectionError instanceof Error && context.connectionError !== error
        ? ` (after: ${context.connectionError.message})`
        : '';
    return new LunationError(
      'store-unavailable',
      `PostgreSQL is unavailable to the ${adapter} (${operation}${code ? `, ${code}` : ''}): ${message}${earlier}; check that the server is running and reachable, then retry`,
      { cause: error, retryable: true },
    );
  }
  if (code !== undefined && missingSchemaStates.test(code)) {
    return new LunationError(
      'store-unavailable',
      `The ${adapter}'s PostgreSQL schema is missing or incomplete (${code}): ${message}; open the ${adapter} again so it migrates the schema`,
      { cause: error, retryable: false },
    );
  }
  if (closedPoolMessages.test(message)) {
    return new LunationError('store-unavailable', `The ${adapter}'s PostgreSQL pool is closed: ${message}`, {
      cause: error,
      retryable: false,
    });
  }
  return new LunationError(
    'internal',
    `The ${adapter}'s ${operation} failed in PostgreSQL${code ? ` (${code})` : ''}: ${message}`,
    { cause: error },
  );
}
