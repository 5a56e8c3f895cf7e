import type {
  Clock,
  DispatchClaim,
  Dispatcher,
  InboxEntry,
  LunationError,
  LunationStore,
} from '@lunation/contract';
import type { RunExecutor } from '@lunation/runtime/executor';
import type { ThreadCancel } from './thread-cancel.js';
import { errorFields, type WorkerLogEntry } from './worker-log.js';

/** A fact of the work on a claimed thread; the worker adds its own ids (worker, claim, lease owner). */
export type ThreadWorkFact = Omit<WorkerLogEntry, 'workerId'>;

/** What a worker lends the work on one claimed thread. */
export interface ThreadWorkContext {
  /** The runtime's executor: the one way a thread's work runs, in a worker as in `AgentRuntime`. */
  executor: RunExecutor;
  store: LunationStore;
  dispatcher: Dispatcher;
  /** How long a run's event log stays readable after the run ends (or waits). */
  eventTtlMs: number;
  /** How long the claim holds: it is extended before each submission is applied. */
  claimLockMs: number;
  /** The worker's clock: log expiry checks, event timestamps, append back-off. */
  clock: Clock;
  /** A submission the runtime refused as malformed: it is acknowledged and dropped. */
  onRejected(entry: InboxEntry, error: LunationError): void;
  /** Told of each run started and ended here, of a lost lease and of failed event appends. */
  report(fact: ThreadWorkFact): void;
}

/** What every stage of the work on one claimed thread shares: the worker's loan, the claim, its cancel request. */
export interface ClaimedThread {
  readonly context: ThreadWorkContext;
  readonly claim: DispatchClaim;
  readonly cancel: ThreadCancel;
}

/** Reports an append to a run's event log that failed (the pipe retries it). */
export function reportAppendFailed(thread: ClaimedThread, runId: string, error: unknown): void {
  thread.context.report({
    level: 'warn',
    event: 'event-append-failed',
    message: `An append to the event log of run "${runId}" failed (retried): ${errorFields(error).error}`,
    runId,
    ...errorFields(error),
  });
}
