import {
  type Clock,
  type IdSource,
  LunationError,
  type LunationStore,
  type ResumeDecision,
  type RunIdentity,
} from '@lunation/contract';
import type { z } from 'zod';
import type { TaskHost } from './background-tasks.js';
import { type ResumeCutOffRunsOptions, type ResumedCutOffRuns, resumeCutOffRuns } from './cut-off-runs.js';
import type { EventStream } from './event-stream.js';
import { observed } from './executor/live-run.js';
import type { RunDispatch } from './executor/run-dispatch.js';
import type { RunExecutor } from './executor/run-executor.js';
import {
  type DecisionOutcome,
  type DecisionTarget,
  normaliseInput,
  type RunHandle,
  type RunInput,
  type RunOptions,
  type SendDecisionsOptions,
  validateDecisionShapes,
} from './executor/run-options.js';
import type { AgentRuntimeOptions } from './executor/runtime-options.js';
import { ThreadExecutor } from './executor/thread-executor.js';
import type { DeliveryMode } from './loop/inbox.js';
import type { RunResult } from './loop/run-scope.js';
import type { AgentRegistry } from './registry.js';
import {
  type ForkResult,
  type ForkThreadOptions,
  forkThread,
  listCheckpoints,
  type ThreadStepCheckpoint,
} from './time-travel.js';

export type {
  AgentRuntimeOptions,
  DecisionOutcome,
  DecisionTarget,
  ResumeCutOffRunsOptions,
  ResumedCutOffRuns,
  RunHandle,
  RunInput,
  RunOptions,
  SendDecisionsOptions,
};

/** Options of {@link AgentRuntime.fork}: where to fork from, and the fork's first input. */
export interface ForkOptions extends Omit<ForkThreadOptions, 'continueRun'> {
  /** The fork's first run starts with this input at once (its handle is the result's `run`). */
  input?: RunInput;
  /**
   * The fork's first run starts at once without new input, continuing the checkpoint's run from its step
   * (`continueRun`): the model is called on the copied history. Not with `input`. @default false
   */
  continue?: boolean;
}

/** What {@link AgentRuntime.fork} made: the fork, and its first run when `input` was given. */
export interface ForkOutcome extends ForkResult {
  /** The fork's first run, started with `input`. */
  run?: RunHandle;
}

/** A conversation kept open across inputs: one long-lived run. */
export interface Session {
  readonly threadId: string;
  /** Sends input and resolves with the reply's final text once the agent waits again. */
  send(input: RunInput): Promise<string>;
  /** Every event of the session's run. */
  readonly events: EventStream | undefined;
  /** Ends the session's run and resolves with its result. */
  close(): Promise<RunResult | undefined>;
}

/**
 * Runs agents on threads: one active run per thread, cancellation, decisions, durable when given a store. It
 * accepts requests and hands them to its executor (the loop under each thread's lease) in this process; a fleet
 * (`AgentWorker`, `FleetClient`) puts a dispatcher between the two.
 */
export class AgentRuntime {
  readonly registry: AgentRegistry;
  readonly store: LunationStore | undefined;
  /** Hosts this process's background tasks. */
  readonly tasks: TaskHost;
  /**
   * The executor this runtime opens its runs on, for a process that runs work it did not accept itself (a
   * fleet's `AgentWorker`): see `@lunation/runtime/executor`.
   */
  readonly executor: RunExecutor;
  /** Where this runtime reads time and sets its timers (`AgentRuntimeOptions.clock`). */
  readonly clock: Clock;
  /** Where this runtime's ids and random choices come from (`AgentRuntimeOptions.ids`). */
  readonly ids: IdSource;
  private readonly dispatch: RunDispatch;

  constructor(options: AgentRuntimeOptions) {
    const executor = new ThreadExecutor(options);
    this.executor = executor;
    this.clock = executor.clock;
    this.ids = executor.ids;
    this.dispatch = executor;
    this.store = executor.store;
    this.registry = executor.registry;
    this.tasks = executor.tasks;
  }

  /** The active run of a thread (or with that run id) in this process. */
  activeRun(id: string): RunIdentity | undefined {
    return this.dispatch.activeRun(id);
  }

  /**
   * Starts (or resumes) a run on a thread. Fails at once with `thread-busy` when the thread has an active run,
   * here or in another process sharing the store.
   */
  async run(options: RunOptions): Promise<RunHandle> {
    return observed(await this.dispatch.open(options, options.stream !== false));
  }

  /**
   * Runs and waits for the result. With an `output` schema the result's `output` is typed by it (validated
   * JSON, present when the run ended with one).
   */
  generate<Schema extends z.ZodType = z.ZodType<unknown>>(
    options: RunOptions & { output?: Schema },
  ): Promise<RunResult<z.infer<Schema>>> {
    // Not async: a run started at once hands back its own result promise, with no promise around it.
    try {
      const started = this.dispatch.open(options, options.stream ?? false);
      const result = started instanceof Promise ? started.then(resultOfRun) : started.result;
      return result as Promise<RunResult<z.infer<Schema>>>;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Sends messages to a thread's active run (by thread id or run id): `queue` delivers them at the next step
   * boundary, before the next model call; `steer` does the same and tells the model the user interjected;
   * `interrupt` also cancels an in-flight model call and continues with the new input. With no active run on
   * the thread, a new run starts with the messages (and its handle is returned).
   */
  async sendMessages(
    id: string,
    input: RunInput,
    mode: DeliveryMode = 'queue',
  ): Promise<RunHandle | undefined> {
    const messages = normaliseInput(input, this.ids);
    if (messages.length === 0)
      throw new LunationError('invalid-argument', 'sendMessages() needs at least one message');
    return this.dispatch.send(id, messages, mode);
  }

  /** Runs one input on a thread and returns the final text. */
  async ask(
    threadId: string,
    text: string,
    options: Omit<RunOptions, 'threadId' | 'input'> = {},
  ): Promise<string> {
    return (await this.generate({ ...options, threadId, input: text })).finalText;
  }

  /**
   * The thread's checkpoints, one per step, oldest first (`listCheckpoints`): what {@link fork} starts from.
   * Needs a store.
   */
  async checkpoints(threadId: string): Promise<ThreadStepCheckpoint[]> {
    return listCheckpoints(this.requireStore('checkpoints()'), threadId);
  }

  /**
   * Forks a new thread from a checkpoint of `threadId` (`forkThread`: the original stays as it is, and no
   * recorded side effect of it runs again unless `openCalls: 'rerun'` asks), then, with `input`, starts the fork's
   * first run with it. Needs a store.
   */
  async fork(threadId: string, options: ForkOptions): Promise<ForkOutcome> {
    const { input, continue: continueRun = false, ...forkOptions } = options;
    if (continueRun && input !== undefined) {
      throw new LunationError(
        'invalid-argument',
        'fork() either continues the run (continue) or sends input',
      );
    }
    const store = this.requireStore('fork()');
    const fork = await forkThread(store, threadId, { ...forkOptions, continueRun }, this);
    if (input === undefined && !continueRun) return fork;
    return {
      ...fork,
      run: await this.run({
        threadId: fork.thread.id,
        ...(input === undefined ? {} : { input }),
        ...(fork.thread.resourceId ? { resourceId: fork.thread.resourceId } : {}),
      }),
    };
  }

  private requireStore(what: string): LunationStore {
    if (!this.store) {
      throw new LunationError(
        'invalid-argument',
        `${what} reads a thread's stored steps: build the runtime with a store (\`.store(...)\`)`,
      );
    }
    return this.store;
  }

  /** Opens a session: one run kept open for a sequence of inputs, until `close()`. */
  session(threadId: string, options: Omit<RunOptions, 'threadId' | 'input' | 'keepAlive'> = {}): Session {
    const dispatch = this.dispatch;
    let handle: RunHandle | undefined;
    const turns: Array<{ resolve: (text: string) => void; reject: (error: unknown) => void }> = [];
    const onTurnEnd = (turn: { finalText: string }) => turns.shift()?.resolve(turn.finalText);
    const failTurns = (error: unknown) => {
      for (const turn of turns.splice(0)) turn.reject(error);
    };
    return {
      threadId,
      get events() {
        return handle?.events;
      },
      send: async (input) => {
        const reply = new Promise<string>((resolve, reject) => turns.push({ resolve, reject }));
        if (!handle) {
          handle = await this.run({ ...options, threadId, input, keepAlive: true, onTurnEnd });
          handle.result.then((result) => {
            // A run that ended without waiting again (suspended, stopped, ...) answers pending turns with its text.
            for (const turn of turns.splice(0)) turn.resolve(result.finalText);
          }, failTurns);
        } else if (!dispatch.deliverToRun(handle.runId, normaliseInput(input, this.ids))) {
          throw new LunationError('invalid-argument', `The session's run ${handle.runId} has ended`);
        }
        return reply;
      },
      close: async () => {
        if (!handle) return undefined;
        dispatch.closeRun(handle.runId);
        return handle.result;
      },
    };
  }

  /**
   * Deletes a thread with its messages, runs, state and ledger (in the store, or in this process without one).
   * `thread-busy` while a run of it is active here. False when it did not exist.
   */
  deleteThread(threadId: string): Promise<boolean> {
    return this.dispatch.deleteThread(threadId);
  }

  /** The identities of the runs active in this process. */
  activeRuns(): RunIdentity[] {
    return this.dispatch.activeRuns();
  }

  /** Cancels every run active in this process (e.g. on shutdown) and waits for them to end. */
  cancelAll(reason = 'cancelled'): Promise<void> {
    return this.dispatch.cancelAll(reason);
  }

  /** Cancels the active run with this run id or thread id. True when one was found. */
  cancel(id: string, reason = 'cancelled'): boolean {
    return this.dispatch.requestCancel(id, reason);
  }

  /**
   * Answers open tickets of a waiting run: of the thread `{ threadId }`, of the run `{ runId }`, or by an id
   * that may name either (an id naming both a run and another thread is refused as ambiguous). Decisions are
   * checked first, here for their shapes and against the thread's open tickets once it is leased: a malformed
   * decision, an unknown ticket or a payload failing the ticket's response schema is rejected and changes
   * nothing; a repeated decisionId is ignored. The run's loop applies them (C0, with an in-flight ledger entry
   * for each approved call); once every ticket is decided, the run resumes (in this process) and `run` is its
   * handle. With `resourceId`, a thread of another owner is `not-found`, as for {@link run}.
   */
  async sendDecisions(
    target: DecisionTarget,
    decisions: ResumeDecision[],
    options: SendDecisionsOptions = {},
  ): Promise<DecisionOutcome> {
    return this.dispatch.decide(target, validateDecisionShapes(decisions), options);
  }

  /**
   * Continues, in this process, every thread of the store whose latest run was cut off (its process died
   * mid-run: status `running`, or waiting on background tasks), as `run({ threadId })` with no input would; the
   * ledger keeps finished tools from running again. Call it when a single server starts on a durable store. A
   * thread still leased by a stopped process is retried until the lease lapses (`busyWaitMs`); one held by a
   * live run stays busy and is reported, not failed. Without a store there is nothing to continue.
   */
  async resumeCutOffRuns(options: ResumeCutOffRunsOptions = {}): Promise<ResumedCutOffRuns> {
    if (this.store === undefined) return { resumed: [], busy: [], failed: [] };
    return resumeCutOffRuns(this.store, (run) => this.run(run), options, this.clock);
  }

  /** Waits for every active run to end. */
  drain(): Promise<void> {
    return this.dispatch.drain();
  }
}

function resultOfRun(handle: RunHandle): Promise<RunResult> {
  return handle.result;
}
