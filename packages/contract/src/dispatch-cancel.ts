import { z } from 'zod';

/**
 * A request to cancel a thread's run, durable until the worker holding the thread clears it (once the run it
 * names has ended). A thread holds one pending request per run it names (and one naming no run).
 */
export const cancelRequestSchema = z.object({
  /** Names this request in `clearCancel`; a newer request for the same run replaces an older one. */
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
  /**
   * Records a cancel request for the thread and tells its watchers. It replaces only an earlier request naming
   * the same run (or, naming no run, the earlier request naming none): requests for other runs of the thread stay.
   */
  requestCancel(input: CancelRequestInput): Promise<CancelRequest>;
  /** The thread's pending cancel requests, oldest first (at most one per run named, one naming none). */
  cancelRequests(threadId: string): Promise<CancelRequest[]>;
  /**
   * Calls `listener` for the thread's cancel requests until `close()`: at once for each request made before,
   * then for each new one, once per request id. Resolves when the watch is live.
   */
  watchCancel(threadId: string, listener: (request: CancelRequest) => void): Promise<CancelWatch>;
  /**
   * Clears a request once the run it names has ended: only the request `requestId` names when given (a newer
   * one for the same run, and those for other runs, stay); without `requestId`, every request of the thread.
   * False when there was nothing to clear.
   */
  clearCancel(threadId: string, requestId?: string): Promise<boolean>;
}
