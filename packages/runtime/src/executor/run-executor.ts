import type { ResumeDecision } from '@lunation/contract';
import type { ToolCallRecord } from '../loop/call-records.js';
import type {
  DecisionOutcome,
  DecisionTarget,
  RunHandle,
  RunOptions,
  SendDecisionsOptions,
} from './run-options.js';

/**
 * A runtime's executor, as a process that runs work it did not accept itself reaches it (`runtime.executor`): a
 * fleet's worker (`@lunation/fleet`) claims a thread's submissions from a dispatcher and runs each through it,
 * so a thread's work executes one way wherever it was submitted. Everything else about runs goes through
 * `AgentRuntime`.
 */
export interface RunExecutor {
  /** Names the executor in leases and in the run journal (`AgentRuntimeOptions.owner`). */
  readonly owner: string;
  /** This process start's incarnation in leases (with a store): no other live process has it. */
  readonly incarnation: string | undefined;
  /** Opens (starts or resumes) a run now, as `AgentRuntime.run` does. */
  run(options: RunOptions): Promise<RunHandle>;
  /** Applies decisions to a thread's open tickets, as `AgentRuntime.sendDecisions` does. */
  decide(
    target: DecisionTarget,
    decisions: ResumeDecision[],
    options?: SendDecisionsOptions,
  ): Promise<DecisionOutcome>;
  /**
   * Takes the thread's lease in the name of `runId` (`thread-busy` while another process holds it) and resolves
   * its fencing token; undefined for a runtime without a store, which has no leases.
   */
  acquireLease(threadId: string, runId: string): Promise<number | undefined>;
  /** Releases a lease taken with {@link RunExecutor.acquireLease}. */
  releaseLease(threadId: string, token: number): Promise<void>;
  /** What the executor loaded for a run it opened (undefined for a handle it did not open). */
  loadedRun(handle: RunHandle): LoadedRun | undefined;
}

/** What the executor loaded for a run it opened ({@link RunExecutor.loadedRun}). */
export interface LoadedRun {
  /** The fencing token of the lease the run holds (or held) its thread under; undefined without a store. */
  leaseToken: number | undefined;
  /** How many of the thread's messages were committed when the run loaded it. */
  messageCount: number | undefined;
  /** The open step's call records as the run loaded them (results settled before it ran). */
  callRecords: Readonly<Record<string, ToolCallRecord>> | undefined;
}
