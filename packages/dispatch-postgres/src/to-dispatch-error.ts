import { LunationError } from '@lunation/contract';

/** The SQLSTATE of a PostgreSQL error (or a Node.js error code such as `ECONNREFUSED`). */
export function errorCode(error: unknown): string | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

// Classes 08 (connection), 53 (resources), 57P (operator intervention), 58 (system): try again later.
const retryableStates = /^(08|53|57P|58)/;
// 22021 (a NUL or invalid byte in a string), 22P02 / 22P05 (JSON PostgreSQL cannot store), 22003 (a number out
// of range), 54000 (a value too long): the input is the problem.
const invalidInputStates = /^(22021|22P02|22P05|22003|54000)$/;
const networkErrors =
  /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)$/;
const connectionMessages =
  /Connection terminated|connection timeout|Client has encountered a connection error|timeout exceeded when trying to connect/i;

/**
 * Maps anything a pg or pg-boss call threw to a LunationError; LunationErrors pass through unchanged.
 * `connectionError` is the pool's last error of its own (an idle connection lost), named when the server is
 * unavailable.
 */
export function toDispatchError(error: unknown, operation: string, connectionError?: unknown): LunationError {
  if (LunationError.isInstance(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  const code = errorCode(error);
  if (code !== undefined && invalidInputStates.test(code)) {
    return new LunationError(
      'invalid-argument',
      `PostgreSQL cannot store this value (${code}): ${message}; ids, strings and JSON must not contain NUL (\\u0000) characters`,
      { cause: error },
    );
  }
  if (code !== undefined && /^(40001|40P01|55P03)$/.test(code)) {
    return new LunationError(
      'store-unavailable',
      `PostgreSQL aborted the dispatcher's ${operation} (${code}: ${message}) because of a concurrent transaction; nothing was changed, retry it`,
      { cause: error, retryable: true },
    );
  }
  if (
    (code !== undefined && (retryableStates.test(code) || networkErrors.test(code))) ||
    connectionMessages.test(message)
  ) {
    const earlier =
      connectionError instanceof Error && connectionError !== error
        ? ` (after: ${connectionError.message})`
        : '';
    return new LunationError(
      'store-unavailable',
      `PostgreSQL is unavailable to the dispatcher (${operation}${code ? `, ${code}` : ''}): ${message}${earlier}; check that the server is running and reachable, then retry`,
      { cause: error, retryable: true },
    );
  }
  if (code === '3F000' || code === '42P01' || code === '42883') {
    return new LunationError(
      'store-unavailable',
      `The dispatcher's PostgreSQL schema is missing or incomplete (${code}): ${message}; open the dispatcher again so it migrates the schema`,
      { cause: error, retryable: false },
    );
  }
  if (/pool after calling end|Cannot use a pool after|Client was closed|Database not opened/i.test(message)) {
    return new LunationError('store-unavailable', `The dispatcher's PostgreSQL pool is closed: ${message}`, {
      cause: error,
      retryable: false,
    });
  }
  return new LunationError(
    'internal',
    `The dispatcher's ${operation} failed${code ? ` (${code})` : ''}: ${message}`,
    { cause: error },
  );
}
