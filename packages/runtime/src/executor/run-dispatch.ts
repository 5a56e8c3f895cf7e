import type { Message, ResumeDecision, RunIdentity } from '@lunation/contract';
import type { TaskHost } from '../background-tasks.js';
import type { DeliveryMode } from '../loop/inbox.js';
import type { AgentRegistry } from '../registry.js';
import type {
  DecisionOutcome,
  DecisionTarget,
  RunHandle,
  RunOptions,
  SendDecisionsOptions,
} from './run-options.js';

/**
 * The seam between the runtime's front (`AgentRuntime`) and the executor: a run is opened (or decisions or
 * follow-up messages reach a thread), a cancel is signalled, and a run's events are followed through its
 * handle. In one process the executor is this seam itself, with no queue between: the
 * front's semantics (a run starts at once or fails with `thread-busy`; handles carry signals, callbacks and
 * schemas) are the executor's own. Across processes the fleet puts a `Dispatcher` in front of the same executor
 * (`AgentWorker`).
 */
export interface RunDispatch {
  readonly registry: AgentRegistry;
  readonly tasks: TaskHost;
  /**
   * Opens (starts or resumes) a run now: its handle at once, without a promise, when nothing needs the store
   * first. `buffer` says whether the handle's `events` buffer the run's events. Throws synchronously on a bad
   * request. (Unlike `Dispatcher.submit`, nothing is queued.)
   */
  open(options: RunOptions, buffer: boolean): RunHandle | Promise<RunHandle>;
  /**
   * Applies decisions (their shapes checked at the door) to the open tickets of a thread or run, as
   * `options.resourceId`'s caller; resumes once all are decided.
   */
  decide(
    target: DecisionTarget,
    decisions: ResumeDecision[],
    options?: SendDecisionsOptions,
  ): Promise<DecisionOutcome>;
  /** Sends messages to the live run of a thread or run id, or starts a run with them when there is none. */
  send(id: string, messages: Message[], mode: DeliveryMode): Promise<RunHandle | undefined>;
  /** Queues messages for the live run with this run id; false when it has ended. */
  deliverToRun(runId: string, messages: Message[]): boolean;
  /** Ends a kept-alive run once it waits for input. */
  closeRun(runId: string): void;
  /** Signals a cancel to the live run with this run id or thread id; false when there is none. */
  requestCancel(id: string, reason: string): boolean;
  /** Cancels every live run and waits for them to end. */
  cancelAll(reason: string): Promise<void>;
  /** Waits for every live run to end. */
  drain(): Promise<void>;
  /** The live run with this run id or thread id. */
  activeRun(id: string): RunIdentity | undefined;
  /** The runs whose loop runs now. */
  activeRuns(): RunIdentity[];
  /** Deletes a thread; `thread-busy` while a run of it is live. */
  deleteThread(threadId: string): Promise<boolean>;
}
