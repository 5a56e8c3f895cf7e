import { z } from 'zod';

/** A request to cancel a thread's run, durable until the worker holding the thread clears it. */
export const cancelRequestSchema = z.object({
  /** Names this request in `clearCancel`; a newer request replaces an older one. */
  id: z.string().min(1),
  threadId: z.string().min(1),
  /** Only this run is to be cancelled; absent: whatever run the thread has. */
  runId: z.string().min(1).optional(),
  reason: z.string(),
  requestedAt: z.number().int().nonnegative(),
});
/** A request to cancel a thread's run; see {@link cancelRequestSchema}. */
export type CancelRequest = z.infer<typeof cancelRequestSchema>;

/** What {@link CancelSignals.requestCancel} takes. */
export interface CancelRequestInput {
  threadId: string;
  /** Only this run is to be cancelled. */
  runId?: string;
  reason: string;
}

/** An open {@link CancelSignals.watchCancel}; `close()` stops it. */
export interface CancelWatch {
  /** Stops calling the listener. */
  close(): void;
}

/**
 * Cancels across processes: any process may request one; the worker holding the thread watches for it, acts
 * on it (fenced by its thread lease) and clears it. A dropped client stream is not a cancel.
 */
export interface CancelSignals {
  /** Records a cancel request for the thread (replacing an earlier one) and tells its watchers. */
  requestCancel(input: CancelRequestInput): Promise<CancelRequest>;
  /** The thread's current cancel request, if any. */
  cancelRequest(threadId: string): Promise<CancelRequest | undefined>;
  /**
   * Calls `listener` for the thread's cancel requests until `close()`: at once for a request made before, then
   * for each new one, once per request id. Resolves when the watch is live.
   */
  watchCancel(threadId: string, listener: (request: CancelRequest) => void): Promise<CancelWatch>;
  /**
   * Clears the thread's request once handled: only the request `requestId` names when given (a newer one
   * stays). False when there was nothing to clear.
   */
  clearCancel(threadId: string, requestId?: string): Promise<boolean>;
}
