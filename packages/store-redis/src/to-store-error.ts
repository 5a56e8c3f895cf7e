import { LunationError } from '@lunation/contract';

/** Server replies that mean "not now" rather than "this script is wrong". */
const unavailableReplies =
  /^(LOADING|BUSY|MASTERDOWN|READONLY|CLUSTERDOWN|TRYAGAIN|OOM|NOREPLICAS|NOAUTH|WRONGPASS)/;

/** Maps anything an ioredis call threw to a LunationError; LunationErrors pass through unchanged. */
export function toStoreError(error: unknown, scriptName: string, connectionError: unknown): LunationError {
  if (LunationError.isInstance(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  const name = error instanceof Error ? error.name : '';
  if (name === 'ReplyError' && !unavailableReplies.test(message)) {
    return new LunationError('internal', `Redis rejected the store's ${scriptName} script: ${message}`, {
      cause: error,
    });
  }
  // The connection's own error (e.g. ECONNREFUSED) says more than the command's "retries exhausted".
  const cause = connectionError ?? error;
  const reason = cause instanceof Error && cause !== error ? `${message} (${cause.message})` : message;
  return new LunationError(
    'store-unavailable',
    `Redis is unavailable: ${reason}; check that the server is running and reachable, then retry`,
    { cause },
  );
}
