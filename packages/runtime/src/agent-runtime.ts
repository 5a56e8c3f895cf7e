import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  type AgentEvent,
  type EventSink,
  emptyUsage,
  type Instrumentation,
  type JsonValue,
  LunationError,
  type LunationStore,
  type Message,
  type ResumeDecision,
  type RunIdentity,
  type RunInstrumentation,
  type RunOrigin,
  type RunRecord,
  type SuspensionTicket,
  type TerminationReason,
  type TraceCarrier,
  type Usage,
  type UserMessage,
} from '@lunation/contract';
import { z } from 'zod';
import type { AgentDefinition, ResolvedAgent } from './agent.js';
import type { TaskHost, TaskRecord } from './background-tasks.js';
import { checkDecisions, validateDecisionShapes } from './decisions.js';
import { EventStream } from './event-stream.js';
import { createId } from './id.js';
import { AgentLoop } from './loop/agent-loop.js';
import { openTickets, type ToolCallRecord, toolCallsKey, upgradeThreadState } from './loop/call-records.js';
import type { DeliveryMode } from './loop/inbox.js';
import { type FrontendTool, RunAbortController, type RunResult } from './loop/run-scope.js';
import {
  InProcessPersistence,
  type InProcessRetention,
  type LoadedThread,
  type Persistence,
  StorePersistence,
} from './persistence.js';
import { AgentRegistry, type RegistrySet, type RegistrySnapshot } from './registry.js';
import { appliedDecisionsKey, traceContextKey } from './runtime-keys.js';
import { busyHere, ThreadLeases } from './thread-lease.js';
import { type AnyTool, defineTool } from './tool.js';

export interface AgentRuntimeOptions extends RegistrySet {
  /** Durable store; without one, threads live in this process's memory only. */
  store?: LunationStore;
  sinks?: EventSink[];
  /** Thread lease time-to-live; renewed every third of it while the run lives. @default 30000 */
  leaseTtlMs?: number;
  /**
   * Names this runtime in leases (and in `thread-busy` messages, for logs). Several live runtimes may share one
   * (replicas started from one configuration): each instance also holds its leases under an incarnation id of
   * its own, so two live processes never run one thread at once. A runtime started again with the same owner
   * (a restarted server with a stable name) takes its previous life's leases over once they have gone unrenewed
   * for half `leaseTtlMs`, instead of waiting for them to expire. @default `${hostname}:${pid}:<random>`
   */
  owner?: string;
  /** Emit a `state-snapshot` event before every `step-end`. @default false */
  emitStateSnapshots?: boolean;
  /** Without a store: how many threads this process keeps (see `InProcessRetention`). @default all */
  retention?: InProcessRetention;
  /**
   * Observability, e.g. `openTelemetryInstrumentation()` of `@lunation/otel`: told of every run's model calls,
   * tool executions, checkpoints, ledger hits, leases, suspensions and resumes. Without one none of it is built.
   */
  instrumentation?: Instrumentation;
}

/** Input of a run: a text, a message, or several messages. */
export type RunInput = string | Message | Message[];

/** What {@link AgentRuntime.run} takes. */
export interface RunOptions {
  threadId: string;
  /** @default the thread's active agent, else the runtime's first agent */
  agentId?: string;
  input?: RunInput;
  /**
   * The id of the run this starts, when it starts one (a continued run keeps its own): lets whoever asked for
   * the run follow its events before it starts, e.g. through a dispatcher. @default a new id
   */
  runId?: string;
  /** Answers to the thread's open tickets. */
  decisions?: ResumeDecision[];
  signal?: AbortSignal;
  /** Owner of a new thread (tenant / user id). */
  resourceId?: string;
  /** Client-side tools for this run: the model sees them; a call suspends until the client answers. */
  frontendTools?: FrontendTool[];
  /** Buffer events for `handle.events`. Turn off when only the result matters. @default true */
  stream?: boolean;
  /** Extra sink for this run only. */
  onEvent?: (event: AgentEvent) => void;
  /** Keep the run open after each reply, waiting for input (see `session()`). @default false */
  keepAlive?: boolean;
  /** The run must end with a JSON value matching this schema (overrides the agent's `output`). */
  output?: z.ZodType;
  /** @internal child runs */
  parent?: { runId: string; toolCallId: string; origin: RunOrigin };
  /** @internal background task results to deliver */
  taskResults?: TaskRecord[];
  /** @internal */
  onTurnEnd?(turn: { finalText: string; steps: number; usage: Usage }): void;
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

/** A started run. */
export interface RunHandle {
  readonly runId: string;
  readonly threadId: string;
  readonly identity: RunIdentity;
  /** Every event of the run, replayable; ends after `run-end`. */
  readonly events: EventStream;
  readonly result: Promise<RunResult>;
  /** Cancels the run; it ends `cancelled` and is checkpointed. */
  cancel(reason?: string): void;
}

/** What {@link AgentRuntime.sendDecisions} takes beside the id and the decisions. */
export interface SendDecisionsOptions {
  /** The caller's owner (tenant / user id): a thread of another owner is `not-found`, as for `run()`. */
  resourceId?: string;
}

/** What {@link AgentRuntime.sendDecisions} resolves with. */
export interface DecisionOutcome {
  /** Decision ids applied now. */
  applied: string[];
  /** Decision ids ignored because they were applied before. */
  ignored: string[];
  /** Tickets still waiting for a decision. */
  openTickets: SuspensionTicket[];
  /** The resumed run, once every ticket is decided. */
  run?: RunHandle;
}

/** Runs agents on threads: one active run per thread, cancellation, decisions, durable when given a store. */
export class AgentRuntime {
  readonly registry: AgentRegistry;
  readonly store: LunationStore | undefined;
  private readonly persistence: Persistence;
  /** The same persistence when it is this process's memory: runs then open threads without a promise. */
  private readonly local: InProcessPersistence | undefined;
  /** Leases of this runtime's runs; none without a store (the thread maps below suffice in one process). */
  private readonly leases: ThreadLeases | undefined;
  private readonly activeByThread = new Map<string, LiveRun>();
  private readonly activeByRun = new Map<string, LiveRun>();
  private readonly sinks: EventSink[];
  private readonly owner: string;
  private readonly emitStateSnapshots: boolean;
  private readonly instrumentation: Instrumentation | undefined;
  /** The agent resolver handed to runs of the current registry version. */
  private resolver: { snapshot: RegistrySnapshot; resolve(agentId: string): ResolvedAgent } | undefined;
  private readonly liveTasks = new Map<
    string,
    { threadId: string; controller: AbortController; record: TaskRecord }
  >();
  /** Finished task results waiting for a run of their thread. */
  private readonly finishedTasks = new Map<string, TaskRecord[]>();
  /** Hosts this process's background tasks. */
  readonly tasks: TaskHost;

  constructor(options: AgentRuntimeOptions) {
    this.store = options.store;
    if (options.store && options.retention) {
      throw new LunationError(
        'invalid-argument',
        '`retention` applies to runtimes without a store; a store keeps threads until deleteThread()',
      );
    }
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    if (options.store) {
      this.persistence = new StorePersistence(options.store);
      this.leases = new ThreadLeases(
        this.persistence,
        this.owner,
        options.leaseTtlMs ?? 30_000,
        options.instrumentation,
      );
    } else {
      this.local = new InProcessPersistence(options.retention, (threadId) =>
        this.activeByThread.has(threadId),
      );
      this.persistence = this.local;
    }
    this.sinks = options.sinks ?? [];
    this.emitStateSnapshots = options.emitStateSnapshots ?? false;
    this.instrumentation = options.instrumentation;
    this.tasks = this.createTaskHost();
    this.registry = new AgentRegistry(
      {
        models: options.models,
        agents: options.agents,
        ...(options.tools ? { tools: options.tools } : {}),
        ...(options.plugins ? { plugins: options.plugins } : {}),
        ...(options.globalPlugins ? { globalPlugins: options.globalPlugins } : {}),
      },
      (delegate, parent) => this.delegateTool(delegate, parent),
    );
  }

  /** The active run of a thread (or with that run id) in this process. */
  activeRun(id: string): RunIdentity | undefined {
    return (this.activeByRun.get(id) ?? this.activeByThread.get(id))?.identity;
  }

  /**
   * Starts (or resumes) a run on a thread. Fails at once with `thread-busy` when the thread has an active run,
   * here or in another process sharing the store.
   */
  async run(options: RunOptions): Promise<RunHandle> {
    return observed(await this.begin(options, options.stream !== false));
  }

  /**
   * Checks the request and reserves the thread, then starts the run: at once, without a promise, in the common
   * case (no store, no decisions, nothing open on the thread); through {@link start} otherwise. `outcome`,
   * when given, receives what became of the decisions. Throws (synchronously) on a bad request.
   */
  private begin(
    options: RunOptions,
    buffer: boolean,
    outcome?: DecisionOutcome,
  ): LiveRun | Promise<RunHandle> {
    const { threadId } = options;
    if (typeof threadId !== 'string' || threadId.length === 0) {
      throw new LunationError('invalid-argument', 'run() needs a non-empty threadId');
    }
    const busy = this.activeByThread.get(threadId);
    if (busy) throw busyHere(threadId, busy.identity.runId);
    if (options.runId !== undefined && (typeof options.runId !== 'string' || options.runId.length === 0)) {
      throw new LunationError('invalid-argument', 'run() needs `runId` to be a non-empty string when given');
    }
    const input = normaliseInput(options.input);
    const decisions =
      options.decisions === undefined ? NO_DECISIONS : validateDecisionShapes(options.decisions);
    const snapshot = this.registry.current;
    if (options.agentId !== undefined) snapshot.agent(options.agentId);

    const run = new LiveRun(
      {
        threadId,
        runId: options.runId ?? createId(),
        agentId: options.agentId ?? '',
        origin: options.parent?.origin ?? 'user',
      },
      this.sinks,
      buffer,
      options.onEvent,
    );
    this.activeByThread.set(threadId, run);
    if (this.local === undefined || decisions.length > 0 || outcome !== undefined) {
      return this.start(run, options, input, decisions, snapshot, outcome);
    }
    try {
      const thread = this.opened(
        threadId,
        this.local.openNow(threadId, options.resourceId),
        options.resourceId,
      );
      if (thread.threadState[toolCallsKey.name] !== undefined || continuedRun(thread.latestRun)) {
        // Something to settle first (open tickets, a run to continue).
        return this.start(run, options, input, decisions, snapshot, outcome, thread);
      }
      return this.launch(run, options, thread, input, undefined, NO_DECISIONS, snapshot);
    } catch (error) {
      this.release(run);
      throw error;
    }
  }

  /**
   * Starts a run on its reserved thread in the general case: takes the thread's lease, opens the thread (unless
   * `opened`), settles what it waits on (decisions, supersede, recovery), then launches the loop.
   */
  private async start(
    run: LiveRun,
    options: RunOptions,
    input: Message[],
    decisions: ResumeDecision[],
    snapshot: RegistrySnapshot,
    outcome: DecisionOutcome | undefined,
    opened?: LoadedThread,
  ): Promise<RunHandle> {
    const { threadId } = run.identity;
    try {
      if (this.leases) run.leaseToken = await this.leases.acquire(threadId, run.identity.runId);
      const thread =
        opened ??
        this.opened(
          threadId,
          this.local
            ? this.local.openNow(threadId, options.resourceId)
            : await this.persistence.open(threadId, options.resourceId),
          options.resourceId,
        );
      const stored = thread.threadState[toolCallsKey.name] as Record<string, ToolCallRecord> | undefined;
      const records = stored ?? NO_RECORDS;
      const tickets = stored ? openTickets(stored) : NO_TICKETS;
      const latest = thread.latestRun;
      let previous: RunRecord | undefined;
      let freshDecisions = NO_DECISIONS;
      let superseded: RunRecord | undefined;

      if (decisions.length > 0) {
        const applied = new Set((thread.threadState[appliedDecisionsKey.name] ?? []) as string[]);
        const checked = checkDecisions(decisions, records, applied);
        freshDecisions = checked.fresh;
        const undecided = tickets.filter(
          (ticket) => !freshDecisions.some((decision) => decision.ticketId === ticket.id),
        );
        if (freshDecisions.length === 0) {
          // Every decision was applied before: nothing to continue.
          await this.release(run);
          if (outcome) {
            outcome.ignored = checked.ignored;
            outcome.openTickets = tickets;
          }
          return settledHandle(threadId, latest, tickets);
        }
        if (latest && latest.status !== 'done') previous = latest;
        if (outcome) {
          outcome.applied = freshDecisions.map((decision) => decision.decisionId);
          outcome.ignored = checked.ignored;
          outcome.openTickets = undecided;
        }
      } else {
        previous = continuedRun(latest);
        if (outcome) outcome.openTickets = tickets === NO_TICKETS ? [] : tickets;
      }
      if (tickets.length > 0 && decisions.length === 0 && previous === undefined) {
        if (input.length === 0) {
          throw new LunationError(
            'invalid-argument',
            `Thread "${threadId}" has ${tickets.length} open ticket(s); send decisions or a new message`,
            { details: { openTickets: tickets.map((ticket) => ticket.id) } },
          );
        }
        superseded = latest;
      }
      if (previous && previous.identity.runId !== run.identity.runId && this.leases && run.leaseToken) {
        // Continuing an earlier run: hold the lease in that run's name so thread-busy errors name it (acquiring
        // over this instance's own lease issues a new token).
        run.leaseToken = await this.leases.acquire(threadId, previous.identity.runId);
      }
      return this.launch(run, options, thread, input, previous, freshDecisions, snapshot, superseded);
    } catch (error) {
      await this.release(run);
      throw error;
    }
  }

  /** Runs the loop on an opened thread with nothing left to settle: the run becomes active. */
  private launch(
    run: LiveRun,
    options: RunOptions,
    thread: LoadedThread,
    input: Message[],
    previous: RunRecord | undefined,
    decisions: ResumeDecision[],
    snapshot: RegistrySnapshot,
    superseded?: RunRecord,
  ): LiveRun {
    const { threadId, runId } = run.identity;
    const finishedTasks = this.finishedTasks.get(threadId);
    if (
      !previous &&
      input.length === 0 &&
      decisions.length === 0 &&
      !finishedTasks &&
      !options.taskResults?.length
    ) {
      throw new LunationError('invalid-argument', `run() on thread "${threadId}" needs input or decisions`);
    }
    const activeAgent = thread.threadState['runtime.activeAgent'];
    const agentId =
      options.agentId ??
      previous?.identity.agentId ??
      (typeof activeAgent === 'string' && snapshot.hasAgent(activeAgent) ? activeAgent : undefined) ??
      snapshot.firstAgentId;
    if (agentId === undefined) throw new LunationError('invalid-argument', 'The runtime has no agents');
    const agent = snapshot.agent(
      previous && snapshot.hasAgent(previous.identity.agentId) ? previous.identity.agentId : agentId,
    );
    const { parent } = options;
    if (previous) run.identity = previous.identity;
    else if (parent) {
      run.identity = {
        threadId,
        runId,
        agentId: agent.id,
        parentRunId: parent.runId,
        parentToolCallId: parent.toolCallId,
        origin: parent.origin,
      };
    } else run.identity.agentId = agent.id; // the reservation's identity, complete now
    const { identity } = run;
    this.activeByRun.set(identity.runId, run);
    if (options.signal) run.follow(options.signal);
    const instrumentation = this.instrumentation
      ? startInstrumentation(this.instrumentation, identity, agent, input, previous, run.leaseToken)
      : undefined;
    if (this.leases && run.leaseToken !== undefined) {
      this.leases.keep(threadId, run.leaseToken, run.controller, instrumentation);
    }
    const listening = run.listening;
    const loop = new AgentLoop({
      identity,
      agent,
      resolveAgent: this.resolverOf(snapshot),
      persistence: this.persistence,
      leaseToken: run.leaseToken,
      history: thread.messages,
      input,
      threadState: thread.threadState,
      previous,
      decisions,
      superseded,
      frontendTools: options.frontendTools ?? NO_FRONTEND_TOOLS,
      signal: run.controller.signal,
      controller: run.controller,
      emit: listening ? (event) => run.emit(event) : ignoreEvent,
      registryVersion: snapshot.version,
      emitStateSnapshots: this.emitStateSnapshots,
      tasks: this.tasks,
      taskResults: finishedTasks
        ? options.taskResults
          ? [...options.taskResults, ...finishedTasks]
          : finishedTasks
        : options.taskResults,
      listening,
      keepAlive: options.keepAlive,
      onTurnEnd: options.onTurnEnd,
      output: options.output,
      instrumentation,
    });
    // The loop has the results now; taken only here, so a run that fails to start leaves them for the next.
    if (finishedTasks) this.finishedTasks.delete(threadId);
    run.loop = loop;
    run.result = loop.execute().then(
      (result) => {
        const releasing = this.release(run);
        return releasing ? releasing.then(() => result) : result;
      },
      (error: unknown) => {
        const releasing = this.release(run);
        if (!releasing) throw error;
        return releasing.then(() => Promise.reject(error));
      },
    );
    return run;
  }

  /** `snapshot.agent` as a function, made once per registry version. */
  private resolverOf(snapshot: RegistrySnapshot): (agentId: string) => ResolvedAgent {
    if (this.resolver?.snapshot !== snapshot) {
      this.resolver = { snapshot, resolve: (agentId) => snapshot.agent(agentId) };
    }
    return this.resolver.resolve;
  }

  /** The run's thread with its owner checked and its state upgraded to the current layout. */
  private opened(threadId: string, thread: LoadedThread, resourceId: string | undefined): LoadedThread {
    if (resourceId !== undefined && thread.resourceId !== undefined && thread.resourceId !== resourceId) {
      throw new LunationError('not-found', `Thread "${threadId}" does not exist for this owner`);
    }
    thread.threadState = upgradeThreadState(thread.threadState);
    return thread;
  }

  /**
   * Ends the run's hold on its thread: closes its events, frees the thread here and releases its lease; the
   * promise of that release, if it has a lease (nothing to wait for otherwise).
   */
  private release(run: LiveRun): Promise<void> | undefined {
    run.end();
    const { threadId, runId } = run.identity;
    if (this.activeByThread.get(threadId) === run) this.activeByThread.delete(threadId);
    this.activeByRun.delete(runId);
    const token = run.leaseToken;
    run.leaseToken = undefined;
    return this.leases && token !== undefined ? this.leases.release(threadId, token) : undefined;
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
      const started = this.begin(options, options.stream ?? false);
      const result = started instanceof LiveRun ? started.result : started.then(resultOfRun);
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
    const messages = normaliseInput(input);
    if (messages.length === 0)
      throw new LunationError('invalid-argument', 'sendMessages() needs at least one message');
    const active = this.activeByRun.get(id) ?? this.activeByThread.get(id);
    if (active?.loop) {
      active.loop.deliver(messages, mode);
      return undefined;
    }
    return this.run({ threadId: active?.identity.threadId ?? id, input: messages });
  }

  /** Runs one input on a thread and returns the final text. */
  async ask(
    threadId: string,
    text: string,
    options: Omit<RunOptions, 'threadId' | 'input'> = {},
  ): Promise<string> {
    return (await this.generate({ ...options, threadId, input: text })).finalText;
  }

  /** Opens a session: one run kept open for a sequence of inputs, until `close()`. */
  session(threadId: string, options: Omit<RunOptions, 'threadId' | 'input' | 'keepAlive'> = {}): Session {
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
        } else {
          const active = this.activeByRun.get(handle.runId);
          if (!active?.loop)
            throw new LunationError('invalid-argument', `The session's run ${handle.runId} has ended`);
          active.loop.deliver(normaliseInput(input), 'queue');
        }
        return reply;
      },
      close: async () => {
        if (!handle) return undefined;
        this.activeByRun.get(handle.runId)?.loop?.close();
        return handle.result;
      },
    };
  }

  /**
   * Deletes a thread with its messages, runs, state and ledger (in the store, or in this process without one).
   * `thread-busy` while a run of it is active here. False when it did not exist.
   */
  async deleteThread(threadId: string): Promise<boolean> {
    const active = this.activeByThread.get(threadId);
    if (active) throw busyHere(threadId, active.identity.runId);
    this.finishedTasks.delete(threadId);
    return this.persistence.deleteThread(threadId);
  }

  /** The identities of the runs active in this process. */
  activeRuns(): RunIdentity[] {
    return [...this.activeByRun.values()].map((run) => run.identity);
  }

  /** Cancels every run active in this process (e.g. on shutdown) and waits for them to end. */
  async cancelAll(reason = 'cancelled'): Promise<void> {
    for (const run of this.activeByRun.values()) run.controller.abort(reason);
    await this.drain();
  }

  /** Cancels the active run with this run id or thread id. True when one was found. */
  cancel(id: string, reason = 'cancelled'): boolean {
    const active = this.activeByRun.get(id) ?? this.activeByThread.get(id);
    if (!active) return false;
    active.controller.abort(reason);
    return true;
  }

  /**
   * Answers open tickets of a waiting run (by run id or thread id; an id naming both a run and another thread
   * is refused as ambiguous). Decisions are checked first: an unknown ticket or a payload failing the ticket's
   * response schema is rejected and changes nothing; a repeated decisionId is ignored. The run's loop applies
   * them (C0); once every ticket is decided, the run resumes (in this process) and `run` is its handle. With
   * `resourceId`, a thread of another owner is `not-found`, as for {@link run}.
   */
  async sendDecisions(
    id: string,
    decisions: ResumeDecision[],
    options: SendDecisionsOptions = {},
  ): Promise<DecisionOutcome> {
    const threadId = await this.threadOf(id);
    const outcome: DecisionOutcome = { applied: [], ignored: [], openTickets: [] };
    const request: RunOptions = { threadId, decisions };
    if (options.resourceId !== undefined) request.resourceId = options.resourceId;
    const handle = observed(await this.begin(request, true, outcome));
    if (outcome.applied.length === 0) return outcome;
    if (outcome.openTickets.length > 0) {
      // Some tickets stay open: the run recorded the decisions and waits again.
      const result = await handle.result;
      return { ...outcome, openTickets: result.openTickets };
    }
    return { ...outcome, run: handle };
  }

  /** Waits for every active run to end. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.activeByRun.values()].map((run) => run.result));
  }

  private async threadOf(id: string): Promise<string> {
    const active = this.activeByRun.get(id) ?? this.activeByThread.get(id);
    if (active) return active.identity.threadId;
    const run = await this.persistence.getRun(id);
    if (run) {
      const { threadId } = run.identity;
      if (threadId !== id && (await this.persistence.load(id))) {
        throw new LunationError(
          'invalid-argument',
          `"${id}" names both a run (of thread "${threadId}") and a thread; send the decisions by the thread id "${threadId}"`,
          { details: { runId: id, threadId } },
        );
      }
      return threadId;
    }
    const thread = await this.persistence.load(id);
    if (thread) return id;
    throw new LunationError('not-found', `No run or thread "${id}"`);
  }

  private createTaskHost(): TaskHost {
    const start = (
      identity: RunIdentity,
      name: string,
      work: (signal: AbortSignal) => Promise<unknown>,
    ): TaskRecord => {
      const controller = new AbortController();
      const record: TaskRecord = {
        id: createId(),
        name,
        status: 'running',
        owner: this.owner,
        runId: identity.runId,
        startedAt: Date.now(),
      };
      this.liveTasks.set(record.id, { threadId: identity.threadId, controller, record });
      Promise.resolve()
        .then(() => work(controller.signal))
        .then(
          (value): TaskRecord => ({
            ...record,
            status: 'completed',
            finishedAt: Date.now(),
            ...(value === undefined ? {} : { result: JSON.parse(JSON.stringify(value)) as JsonValue }),
          }),
          (error): TaskRecord => ({
            ...record,
            status: controller.signal.aborted ? 'cancelled' : 'failed',
            finishedAt: Date.now(),
            error: controller.signal.aborted
              ? 'cancelled'
              : error instanceof Error
                ? error.message
                : String(error),
          }),
        )
        .then((finished) => {
          this.liveTasks.delete(record.id);
          this.taskFinished(identity.threadId, finished);
        });
      return record;
    };
    return {
      owner: this.owner,
      spawn: start,
      spawnAgent: (identity, agentId, task) =>
        start(identity, `agent:${agentId}`, async (signal) => {
          const child = await this.run({
            threadId: `${identity.threadId}~task~${agentId}~${createId().slice(0, 8)}`,
            agentId,
            input: task,
            signal,
            stream: false,
            parent: { runId: identity.runId, toolCallId: 'background', origin: 'subagent' },
          });
          const result = await child.result;
          if (result.termination.type !== 'natural-end') {
            throw new LunationError(
              'tool-execution-failed',
              `Agent "${agentId}" ended ${result.termination.type}`,
            );
          }
          return result.finalText;
        }),
      isLive: (taskId) => this.liveTasks.has(taskId),
      cancel: (taskId) => {
        const live = this.liveTasks.get(taskId);
        if (!live) return false;
        live.controller.abort('cancelled');
        return true;
      },
    };
  }

  /** Routes a finished task to its thread's active run, or starts a continuation run once none is left. */
  private taskFinished(threadId: string, task: TaskRecord): void {
    const active = this.activeByThread.get(threadId);
    if (active?.loop) {
      active.loop.deliverTask(task);
      return;
    }
    const waiting = this.finishedTasks.get(threadId) ?? [];
    waiting.push(task);
    this.finishedTasks.set(threadId, waiting);
    if (active) return; // a run is starting; it picks the results up
    const stillRunning = [...this.liveTasks.values()].some((live) => live.threadId === threadId);
    if (stillRunning) return;
    // If the thread is busy elsewhere, the results stay queued here for the next run of the thread.
    this.run({ threadId, stream: false }).catch(() => {});
  }

  /** The tool that runs a delegate agent as a child run and returns its final answer. */
  private delegateTool(delegate: AgentDefinition, parent: AgentDefinition): AnyTool {
    return defineTool({
      name: `agent_${delegate.id.replace(/[^a-zA-Z0-9_-]/g, '_')}`.slice(0, 64),
      description:
        delegate.description ??
        `Delegate a task to the "${delegate.id}" agent and get its final answer (from ${parent.id}).`,
      input: z.object({
        task: z.string().describe('What the delegate agent should do, with all needed context'),
      }),
      execute: async ({ task }, context) => {
        const parentRun = this.activeByRun.get(context.identity.runId);
        const child = await this.run({
          threadId: `${context.identity.threadId}~${delegate.id}~${context.callId}`,
          agentId: delegate.id,
          input: task,
          signal: context.signal,
          stream: false,
          parent: { runId: context.identity.runId, toolCallId: context.toolCallId, origin: 'subagent' },
          ...(parentRun ? { onEvent: (event: AgentEvent) => parentRun.emit(event) } : {}),
        });
        const result = await child.result;
        if (result.termination.type === 'cancelled') {
          throw new LunationError('cancelled', `Delegate "${delegate.id}" was cancelled`);
        }
        if (result.status !== 'done' || result.termination.type === 'error') {
          return context.output({
            status: 'error',
            message: `Delegate "${delegate.id}" ended ${result.termination.type}${
              result.termination.type === 'error' ? `: ${result.termination.error.message}` : ''
            }`,
          });
        }
        return context.output({ status: 'success', message: result.finalText, data: result.finalText });
      },
    });
  }
}

/** The run's observer from the runtime's instrumentation (an instrumentation that throws observes nothing). */
function startInstrumentation(
  instrumentation: Instrumentation,
  identity: RunIdentity,
  agent: ResolvedAgent,
  input: Message[],
  previous: RunRecord | undefined,
  leaseToken: number | undefined,
): RunInstrumentation | undefined {
  const suspendedBy = previous?.state[traceContextKey.name] as TraceCarrier | null | undefined;
  const { description } = agent.definition;
  try {
    return instrumentation.runStarted({
      identity,
      provider: agent.model.provider,
      model: agent.model.modelId,
      ...(description === undefined ? {} : { description }),
      resumed: previous !== undefined,
      ...(suspendedBy ? { suspendedBy } : {}),
      input,
      ...(leaseToken === undefined
        ? {}
        : { lease: { token: leaseToken, takeover: previous?.status === 'running' } }),
    });
  } catch {
    return undefined;
  }
}

/**
 * A run of this runtime from the moment it reserves its thread to its end, and the handle its caller gets.
 * Thousands may wait in model calls at once, so it holds only what the run needs: no closures of its own.
 */
class LiveRun implements RunHandle {
  /** Aborted by `cancel()`, the caller's signal, a lost lease or `cancelAll()`. */
  readonly controller = new RunAbortController();
  /** @internal set once the loop runs; until then the thread is only reserved. */
  loop: AgentLoop | undefined;
  /** Set once the loop runs. */
  result!: Promise<RunResult>;
  /** @internal the fencing token of the thread's lease (with a store). */
  leaseToken: number | undefined;
  private stream: EventStream | undefined;
  private signal: AbortSignal | undefined;
  private ended = false;

  constructor(
    /** The run's identity; a run that continues an earlier one takes that run's identity. */
    public identity: RunIdentity,
    private readonly sinks: readonly EventSink[],
    /** Whether `events` buffers the run's events. */
    private readonly buffer: boolean,
    private readonly onEvent: ((event: AgentEvent) => void) | undefined,
  ) {
    if (buffer) this.stream = new EventStream();
  }

  /** @internal whether anyone receives the run's events (its buffer, `onEvent` or a sink). */
  get listening(): boolean {
    return this.buffer || this.onEvent !== undefined || this.sinks.length > 0;
  }

  get runId(): string {
    return this.identity.runId;
  }

  get threadId(): string {
    return this.identity.threadId;
  }

  /** The buffered events; for a run started with `stream: false`, a stream that only ends with the run. */
  get events(): EventStream {
    if (this.stream === undefined) {
      this.stream = new EventStream();
      if (this.ended) this.stream.close();
    }
    return this.stream;
  }

  cancel(reason?: string): void {
    this.controller.abort(reason ?? 'cancelled');
  }

  /** @internal hands an event of the run to its stream, its `onEvent` and the runtime's sinks. */
  emit(event: AgentEvent): void {
    if (this.buffer) this.stream?.push(event);
    if (this.onEvent) this.onEvent(event);
    for (const sink of this.sinks) {
      try {
        const pendingEmit = sink.emit(event);
        if (pendingEmit) pendingEmit.catch(ignoreError);
      } catch {
        // A failing sink must not break the run.
      }
    }
  }

  /** @internal cancels the run when the caller's signal aborts, until the run ends. */
  follow(signal: AbortSignal): void {
    if (signal.aborted) {
      this.controller.abort(signal.reason);
      return;
    }
    this.signal = signal;
    signal.addEventListener('abort', this, { once: true });
  }

  /** @internal the caller's signal aborted (this object is its listener: no closure per run). */
  handleEvent(): void {
    this.controller.abort(this.signal?.reason);
  }

  /** @internal the run ended: its events end, and the caller's signal no longer holds on to it. */
  end(): void {
    this.ended = true;
    this.stream?.close();
    this.signal?.removeEventListener('abort', this);
    this.signal = undefined;
  }
}

/** Shared empty lists for the common run: nothing reads them to change them. */
const NO_DECISIONS: ResumeDecision[] = [];
const NO_FRONTEND_TOOLS: FrontendTool[] = [];
const NO_TICKETS: SuspensionTicket[] = [];
const NO_RECORDS: Readonly<Record<string, ToolCallRecord>> = Object.freeze({});

/** The `emit` of a run nobody listens to: the loop builds no events then. */
function ignoreEvent(): void {}

function ignoreError(): void {}

/** A handle given to a caller, who may never look at its result: a failed run must not be an unhandled rejection. */
function observed(handle: RunHandle): RunHandle {
  handle.result.catch(ignoreError);
  return handle;
}

function resultOfRun(handle: RunHandle): Promise<RunResult> {
  return handle.result;
}

/** The run a new run on the thread continues without decisions: one whose process died, or one that waited for its background tasks. */
function continuedRun(latest: RunRecord | undefined): RunRecord | undefined {
  if (latest?.status === 'running') return latest;
  if (latest?.status === 'waiting' && latest.termination?.type === 'awaiting-tasks') return latest;
  return undefined;
}

/** @internal The messages of a run input; a text becomes a user message with a new id. */
export function normaliseInput(input: RunInput | undefined): Message[] {
  if (input === undefined) return [];
  if (typeof input === 'string') {
    const message: UserMessage = { id: createId(), role: 'user', content: [{ type: 'text', text: input }] };
    return [message];
  }
  return Array.isArray(input) ? input : [input];
}

/**
 * The handle of a run() that continued nothing (every decision was applied before): it reports the thread's
 * waiting (or finished) run as the store has it.
 */
function settledHandle(threadId: string, run: RunRecord | undefined, tickets: SuspensionTicket[]): RunHandle {
  const identity: RunIdentity = run?.identity ?? {
    threadId,
    runId: createId(),
    agentId: 'unknown',
    origin: 'user',
  };
  const status = run?.status ?? (tickets.length > 0 ? 'waiting' : 'done');
  const termination: TerminationReason =
    run?.termination ?? (tickets.length > 0 ? { type: 'suspended' } : { type: 'natural-end' });
  const result: RunResult = {
    identity,
    status,
    termination,
    finalText: run?.finalText ?? '',
    steps: run?.steps ?? 0,
    usage: run?.usage ?? emptyUsage(),
    openTickets: tickets,
    messages: [],
  };
  const stream = new EventStream();
  const seq = 0;
  stream.push({
    type: 'run-end',
    identity,
    seq,
    status,
    termination,
    finalText: result.finalText,
    steps: result.steps,
    usage: result.usage,
    openTickets: tickets,
    timestamp: Date.now(),
  });
  stream.close();
  return {
    runId: identity.runId,
    threadId,
    identity,
    events: stream,
    result: Promise.resolve(result),
    cancel: () => {},
  };
}
