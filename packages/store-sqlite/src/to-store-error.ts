import { LunationError } from '@lunation/contract';

const unavailableCodes =
  /^SQLITE_(BUSY|LOCKED|CANTOPEN|IOERR|FULL|READONLY|NOTADB|CORRUPT|PERM|AUTH|PROTOCOL)/;
const retryableCodes = /^SQLITE_(BUSY|LOCKED|IOERR|PROTOCOL)/;

/** Maps anything a SQLite call threw to a LunationError; LunationErrors pass through unchanged. */
export function toStoreError(error: unknown): LunationError {
  if (LunationError.isInstance(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code === 'string' && unavailableCodes.test(code)) {
    return new LunationError('store-unavailable', `SQLite database unavailable (${code}): ${message}`, {
      cause: error,
      retryable: retryableCodes.test(code),
    });
  }
  if (/database connection is not open/i.test(message)) {
    return new LunationError('store-unavailable', `SQLite connection is closed: ${message}`, {
      cause: error,
      retryable: false,
    });
  }
  return new LunationError('internal', `SQLite store failed: ${message}`, { cause: error });
}
