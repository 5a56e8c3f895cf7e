import { LunationError } from '@lunation/contract';

/**
 * What an {@link AgentWorker} reports to its `log` hook:
 * - `claim-taken` — the worker was handed a thread's work (`attempt` counts the claim's attempts);
 * - `run-started` — a run started here (`how`: `started` for new input, `resumed` after decisions, `recovered` for
 *   a run another process left `running`);
 * - `run-ended` — a run ended or stopped to wait (`status`, `termination`);
 * - `lease-lost` — a run stopped because this worker lost its thread's lease (another process holds it now);
 * - `claim-handed-back` — the thread is held elsewhere: given back without counting a failure;
 * - `claim-completed` — the thread's inbox is empty;
 * - `claim-failed` — the work failed and will be retried: a retryable failure (the store unavailable, a timeout)
 *   hands the claim back uncounted, for `delayMs`; any other counts toward the dispatcher's attempts (`retryAt`);
 * - `claim-dead-lettered` — the work failed for the last time;
 * - `stranded-run-filed` — a `continue` was filed for a run left `running` with nobody holding its thread;
 * - `event-append-failed` — an append to a run's event log failed (it is retried).
 */
export type WorkerLogEvent =
  | 'claim-taken'
  | 'run-started'
  | 'run-ended'
  | 'lease-lost'
  | 'claim-handed-back'
  | 'claim-completed'
  | 'claim-failed'
  | 'claim-dead-lettered'
  | 'stranded-run-filed'
  | 'event-append-failed';

/** How severe a {@link WorkerLogEntry} is. */
export type WorkerLogLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * One fact an `AgentWorker` reports, with the ids the run timeline (`@lunation/http`) shows: `runId`, the lease's
 * `leaseToken`, and the runtime's lease `owner` and `incarnation` (a random id per process start).
 */
export interface WorkerLogEntry {
  level: WorkerLogLevel;
  event: WorkerLogEvent;
  /** A sentence for people. */
  message: string;
  /** The worker's id in claims (`AgentWorkerOptions.workerId`). */
  workerId: string;
  threadId?: string;
  resourceId?: string;
  runId?: string;
  /** The claim's attempt (1 on the first). */
  attempt?: number;
  /** The fencing token of the thread lease the run holds. */
  leaseToken?: number;
  /** The runtime's lease owner name (as the run journal and timeline show it). */
  owner?: string;
  /** The runtime instance's id (as the run journal and timeline show it). */
  incarnation?: string;
  /** `run-started`: how the run got here. */
  how?: 'started' | 'resumed' | 'recovered';
  /** `run-started` of new input: how long its submission waited to be claimed, in milliseconds. */
  waitedMs?: number;
  /** `run-ended`: the run's status. */
  status?: string;
  /** `run-ended`: the run's termination type. */
  termination?: string;
  /** `run-ended`: steps the run took. */
  steps?: number;
  /** `claim-failed`: when the retry becomes claimable (epoch ms). */
  retryAt?: number;
  /** `claim-handed-back`, and `claim-failed` when handed back uncounted: how long until the thread is claimable again. */
  delayMs?: number;
  /** The error's message, for failures. */
  error?: string;
  /** The error's `LunationError` code, when it has one. */
  errorCode?: string;
}

/** `error` and `errorCode` of a log entry. */
export function errorFields(error: unknown): { error: string; errorCode?: string } {
  return {
    error: error instanceof Error ? error.message : String(error),
    ...(LunationError.isInstance(error) ? { errorCode: error.code } : {}),
  };
}
