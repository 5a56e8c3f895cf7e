import { LunationError } from '@lunation/contract';

/** Server replies that mean "not now" rather than "this command is wrong". */
const unavailableReplies =
  /^(LOADING|BUSY|MASTERDOWN|READONLY|CLUSTERDOWN|TRYAGAIN|OOM|NOREPLICAS|NOAUTH|WRONGPASS)/;

/** Connection-level failures of ioredis and of BullMQ's own connection handling. */
const connectionFailures =
  /(ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EPIPE|Connection is closed|connect ETIMEDOUT|max retries|MaxRetriesPerRequest|Stream isn't writeable|Reached the max retries)/i;

/** BullMQ's codes for a job whose lock or state no longer matches the caller's claim. */
const lostClaimCodes = new Set([-1, -2, -3, -6]);

/** True for a BullMQ error saying the job is gone, not locked by this token, or no longer active. */
export function isLostClaim(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' && lostClaimCodes.has(code);
}

/** Maps anything a Redis or BullMQ call threw to a LunationError; LunationErrors pass through unchanged. */
export function toDispatchError(error: unknown, operation: string, connectionError: unknown): LunationError {
  if (LunationError.isInstance(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  const name = error instanceof Error ? error.name : '';
  const replyError = name === 'ReplyError' && !unavailableReplies.test(message);
  if (replyError || (!connectionFailures.test(message) && connectionError === undefined)) {
    return new LunationError('internal', `The dispatcher's ${operation} failed: ${message}`, {
      cause: error,
    });
  }
  // The connection's own error (e.g. ECONNREFUSED) says more than the command's "retries exhausted".
  const cause = connectionError ?? error;
  const reason = cause instanceof Error && cause !== error ? `${message} (${cause.message})` : message;
  return new LunationError(
    'store-unavailable',
    `Redis is unavailable to the dispatcher (${operation}): ${reason}; check that the server is running and reachable, then retry`,
    { cause },
  );
}
