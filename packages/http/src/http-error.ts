import { type ErrorCode, LunationError } from '@lunation/contract';

/** An error answered as `{ "error": { "code", "message" } }` with an HTTP status and extra headers. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** The code of the error raised when the client hangs up mid-body (499, as nginx logs it). */
export const CLIENT_CLOSED = 'client-closed';

const STATUS_BY_CODE: Partial<Record<ErrorCode, number>> = {
  'invalid-argument': 400,
  'decision-invalid': 400,
  'unknown-ticket': 400,
  'not-found': 404,
  'thread-busy': 409,
  'store-conflict': 409,
  'dead-lettered': 409,
  overloaded: 503,
  'store-unavailable': 503,
};

/** The HttpError for anything thrown; LunationErrors keep their code, anything else is a 500 `internal`. */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (LunationError.hasCode(error, 'thread-busy')) return threadBusy(error);
  if (LunationError.isInstance(error)) {
    return new HttpError(STATUS_BY_CODE[error.code] ?? 500, error.code, error.message);
  }
  return new HttpError(500, 'internal', 'Internal server error');
}

/** A JSON response. */
export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}

/** The JSON response of an error: `{ "error": { "code", "message" } }`. */
export function errorResponse(error: HttpError): Response {
  return jsonResponse(error.status, { error: { code: error.code, message: error.message } }, error.headers);
}

/** The caller's thread does not exist (or is another resource's: said the same way). */
export function noThread(threadId: string): HttpError {
  return new HttpError(404, 'not-found', `There is no thread "${threadId}"`);
}

/**
 * A busy thread, said without the runtime's own words: those name the process holding the thread (its host
 * and data folder, for the server's logs). The client learns which run holds it and when to retry.
 */
function threadBusy(error: LunationError): HttpError {
  const { threadId, runId, retryAfterMs } = error.details ?? {};
  const thread = typeof threadId === 'string' ? `Thread "${threadId}"` : 'The thread';
  const run = typeof runId === 'string' ? ` (run ${runId})` : '';
  if (typeof retryAfterMs !== 'number') {
    return new HttpError(409, 'thread-busy', `${thread} has an active run${run}; wait for it or cancel it`);
  }
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1_000));
  return new HttpError(
    409,
    'thread-busy',
    `${thread} has an active run${run} in another server process; retry in ${seconds} s`,
    { 'retry-after': String(seconds) },
  );
}
