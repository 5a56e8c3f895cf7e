import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  type AgentEvent,
  type EventSink,
  emptyUsage,
  type JsonValue,
  LunationError,
  type LunationStore,
  type Message,
  type ResumeDecision,
  type RunIdentity,
  type RunOrigin,
  type RunRecord,
  type SuspensionTicket,
  type TerminationReason,
  type Usage,
  type UserMessage,
} from '@lunation/contract';
import { z } from 'zod';
import type { AgentDefinition } from './agent.js';
import type { TaskHost, TaskRecord } from './background-tasks.js';
import {
  checkDecisions,
  commitPartialDecisions,
  commitSupersede,
  type OpenThread,
  validateDecisionShapes,
} from './decisions.js';
import { EventStream } from './event-stream.js';
import { createId } from './id.js';
import { AgentLoop } from './loop/agent-loop.js';
import {
  openTickets,
  type ToolCallRecord,
  toolCallRecords,
  upgradeThreadState,
} from './loop/call-records.js';
import type { DeliveryMode } from './loop/inbox.js';
import type { FrontendTool, RunResult } from './loop/run-scope.js';
import {
  InProcessPersistence,
  type InProcessRetention,
  type Persistence,
  StorePersistence,
} from './persistence.js';
import { AgentRegistry, type RegistrySet } from './registry.js';
import { appliedDecisionsKey } from './runtime-keys.js';
import { busyHere, ThreadLease } from './thread-lease.js';
import { type AnyTool, defineTool } from './tool.js';

export interface AgentRuntimeOptions extends RegistrySet {
  /** Durable store; without one, threads live in this process's memory only. */
  store?: LunationStore;
  sinks?: EventSink[];
  /** Thread lease time-to-live; renewed every third of it while the run lives. @default 30000 */
  leaseTtlMs?: number;
  /**
   * Identifies this runtime in leases; unique among live runtimes sharing the store. A runtime started again
   * with the same owner (a restarted server with a stable id) takes its own leases back at once instead of
   * waiting for them to expire. @default `${hostname}:${pid}:<random>`
   */
  owner?: string;
  /** Emit a `state-snapshot` event before every `step-end`. @default false */
  emitStateSnapshots?: boolean;
  /** Without a store: how many threads this process keeps (see `InProcessRetention`). @default all */
  retention?: InProcessRetention;
}

/** Input of a run: a text, a message, or several messages. */
export type RunInput = string | Message | Message[];

/** What {@link AgentRuntime.run} takes. */
export interface RunOptions {
  threadId: string;
  /** @default the thread's active agent, else the runtime's first agent */
  agentId?: string;
  input?: RunInput;
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

interface ActiveRun {
  identity: RunIdentity;
  controller: AbortController;
  loop?: AgentLoop;
  emit(event: AgentEvent): void;
  done: Promise<RunResult>;
}

/** Runs agents on threads: one active run per thread, cancellation, decisions, durable when given a store. */
export class AgentRuntime {
  readonly registry: AgentRegistry;
  readonly store: LunationStore | undefined;
  private readonly persistence: Persistence;
  private readonly activeByThread = new Map<string, ActiveRun>();
  private readonly activeByRun = new Map<string, ActiveRun>();
  private readonly sinks: EventSink[];
  private readonly leaseTtlMs: number;
  private readonly owner: string;
  private readonly emitStateSnapshots: boolean;
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
    this.persistence = options.store
      ? new StorePersistence(options.store)
      : new InProcessPersistence(options.retention, (threadId) => this.activeByThread.has(threadId));
    this.sinks = options.sinks ?? [];
    this.leaseTtlMs = options.leaseTtlMs ?? 30_000;
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.emitStateSnapshots = options.emitStateSnapshots ?? false;
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
    return (await this.start(options)).handle;
  }

  private async start(
    options: RunOptions,
  ): Promise<{ handle: RunHandle; outcome: Omit<DecisionOutcome, 'run'> }> {
    const { threadId } = options;
    if (typeof threadId !== 'string' || threadId.length === 0) {
      throw new LunationError('invalid-argument', 'run() needs a non-empty threadId');
    }
    const busy = this.activeByThread.get(threadId);
    if (busy) throw busyHere(threadId, busy.identity.runId);
    const input = normaliseInput(options.input);
    const decisions = validateDecisionShapes(options.decisions ?? []);
    const snapshot = this.registry.current;
    if (options.agentId !== undefined) snapshot.agent(options.agentId);

    const controller = new AbortController();
    const reservation: ActiveRun = {
      identity: {
        threadId,
        runId: createId(),
        agentId: options.agentId ?? '',
        origin: options.parent?.origin ?? 'user',
      },
      controller,
      emit: () => {},
      done: Promise.resolve(undefined as never),
    };
    this.activeByThread.set(threadId, reservation);
    const lease = new ThreadLease(this.persistence, threadId, this.owner, this.leaseTtlMs);
    const release = async () => {
      if (this.activeByThread.get(threadId) === reservation) this.activeByThread.delete(threadId);
      this.activeByRun.delete(reservation.identity.runId);
      await lease.release();
    };
    try {
      await lease.acquire(reservation.identity.runId);
      const thread = await this.openThread(threadId, options.resourceId);
      const commitContext = { persistence: this.persistence, threadId, leaseToken: lease.token };
      const records = toolCallRecords(thread.threadState);
      const tickets = openTickets(records);
      const latest = thread.latestRun;
      let previous: RunRecord | undefined;
      let freshDecisions: ResumeDecision[] = [];
      let outcome: Omit<DecisionOutcome, 'run'> = { applied: [], ignored: [], openTickets: tickets };

      if (decisions.length > 0) {
        const applied = new Set((thread.threadState[appliedDecisionsKey.name] ?? []) as string[]);
        const checked = checkDecisions(decisions, records, applied);
        freshDecisions = checked.fresh;
        const undecided = tickets.filter(
          (ticket) => !freshDecisions.some((decision) => decision.ticketId === ticket.id),
        );
        if (freshDecisions.length === 0 || undecided.length > 0) {
          // Nothing new, or some tickets still open: record what was decided and stay waiting.
          const partial =
            freshDecisions.length > 0
              ? await commitPartialDecisions(commitContext, thread, freshDecisions)
              : { openTickets: tickets, run: latest };
          await release();
          outcome = {
            applied: freshDecisions.map((decision) => decision.decisionId),
            ignored: checked.ignored,
            openTickets: partial.openTickets,
          };
          const handle = settledHandle(
            threadId,
            partial.run ?? latest,
            partial.openTickets,
            freshDecisions,
            records,
          );
          handle.cancel = (reason) => controller.abort(reason);
          return { handle, outcome };
        }
        if (latest && latest.status !== 'done') previous = latest;
        outcome = {
          applied: freshDecisions.map((decision) => decision.decisionId),
          ignored: checked.ignored,
          openTickets: [],
        };
      } else if (latest?.status === 'running') {
        previous = latest; // the process running it died: recover it
      } else if (latest?.status === 'waiting' && latest.termination?.type === 'awaiting-tasks') {
        previous = latest; // continue the run that waited for its background tasks
      }
      const taskResults = [...(options.taskResults ?? []), ...(this.finishedTasks.get(threadId) ?? [])];
      this.finishedTasks.delete(threadId);
      if (tickets.length > 0 && decisions.length === 0 && previous === undefined) {
        if (input.length === 0) {
          throw new LunationError(
            'invalid-argument',
            `Thread "${threadId}" has ${tickets.length} open ticket(s); send decisions or a new message`,
            { details: { openTickets: tickets.map((ticket) => ticket.id) } },
          );
        }
        await commitSupersede(commitContext, thread);
      }
      if (!previous && input.length === 0 && decisions.length === 0 && taskResults.length === 0) {
        throw new LunationError('invalid-argument', `run() on thread "${threadId}" needs input or decisions`);
      }

      const activeAgent = thread.threadState['runtime.activeAgent'];
      const agentId =
        options.agentId ??
        previous?.identity.agentId ??
        (typeof activeAgent === 'string' && snapshot.hasAgent(activeAgent) ? activeAgent : undefined) ??
        snapshot.agentIds[0];
      if (agentId === undefined) throw new LunationError('invalid-argument', 'The runtime has no agents');
      const agent = snapshot.agent(
        previous && snapshot.hasAgent(previous.identity.agentId) ? previous.identity.agentId : agentId,
      );
      const identity: RunIdentity = previous
        ? previous.identity
        : {
            threadId,
            runId: reservation.identity.runId,
            agentId: agent.id,
            ...(options.parent
              ? { parentRunId: options.parent.runId, parentToolCallId: options.parent.toolCallId }
              : {}),
            origin: options.parent?.origin ?? 'user',
          };
      // Continuing an earlier run: hold the lease in that run's name so thread-busy errors name it.
      if (identity.runId !== reservation.identity.runId) await lease.retake(identity.runId);
      reservation.identity = identity;
      const stream = new EventStream();
      const buffer = options.stream !== false;
      const sinks = this.sinks;
      const onEvent = options.onEvent;
      const emit = (event: AgentEvent) => {
        if (buffer) stream.push(event);
        if (onEvent) onEvent(event);
        for (const sink of sinks) {
          try {
            const pendingEmit = sink.emit(event);
            if (pendingEmit) pendingEmit.catch(() => {});
          } catch {
            // A failing sink must not break the run.
          }
        }
      };
      reservation.emit = emit;
      this.activeByRun.set(identity.runId, reservation);
      if (options.signal) {
        if (options.signal.aborted) controller.abort(options.signal.reason);
        else
          options.signal.addEventListener('abort', () => controller.abort(options.signal?.reason), {
            once: true,
          });
      }
      lease.keepAlive((error) => controller.abort(error));
      const loop = new AgentLoop({
        identity,
        agent,
        resolveAgent: (id) => snapshot.agent(id),
        persistence: this.persistence,
        leaseToken: lease.token,
        history: thread.messages,
        input,
        threadState: thread.threadState,
        previous,
        decisions: freshDecisions,
        frontendTools: options.frontendTools ?? [],
        signal: controller.signal,
        emit,
        registryVersion: snapshot.version,
        emitStateSnapshots: this.emitStateSnapshots,
        tasks: this.tasks,
        taskResults,
        listening: buffer || sinks.length > 0 || onEvent !== undefined,
        ...(options.keepAlive ? { keepAlive: true } : {}),
        ...(options.onTurnEnd ? { onTurnEnd: options.onTurnEnd } : {}),
        ...(options.output ? { output: options.output } : {}),
      });
      reservation.loop = loop;
      const result = loop.execute().finally(async () => {
        stream.close();
        await release();
      });
      reservation.done = result;
      result.catch(() => {});
      const handle: RunHandle = {
        runId: identity.runId,
        threadId,
        identity,
        events: stream,
        result,
        cancel: (reason) => controller.abort(reason ?? 'cancelled'),
      };
      return { handle, outcome };
    } catch (error) {
      await release();
      throw error;
    }
  }

  /** Loads a thread (creating it when new), upgraded to the current layout of its state. */
  private async openThread(threadId: string, resourceId: string | undefined): Promise<OpenThread> {
    const loaded = await this.persistence.load(threadId);
    if (!loaded) {
      await this.persistence.createThread(threadId, resourceId);
      return { messages: [], threadState: {}, latestRun: undefined };
    }
    if (resourceId !== undefined && loaded.resourceId !== undefined && loaded.resourceId !== resourceId) {
      throw new LunationError('not-found', `Thread "${threadId}" does not exist for this owner`);
    }
    return {
      messages: loaded.messages,
      threadState: upgradeThreadState(loaded.threadState),
      latestRun: loaded.latestRun,
    };
  }

  /**
   * Runs and waits for the result. With an `output` schema the result's `output` is typed by it (validated
   * JSON, present when the run ended with one).
   */
  async generate<Schema extends z.ZodType = z.ZodType<unknown>>(
    options: RunOptions & { output?: Schema },
  ): Promise<RunResult<z.infer<Schema>>> {
    const handle = await this.run({ stream: false, ...options });
    return handle.result as Promise<RunResult<z.infer<Schema>>>;
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
   * Answers open tickets of a waiting run (by run id or thread id). Decisions are checked first: an unknown
   * ticket or a payload failing the ticket's response schema is rejected and changes nothing; a repeated
   * decisionId is ignored. Once every ticket is decided, the run resumes (in this process).
   */
  async sendDecisions(id: string, decisions: ResumeDecision[]): Promise<DecisionOutcome> {
    const threadId = await this.threadOf(id);
    const { handle, outcome } = await this.start({ threadId, decisions });
    if (outcome.openTickets.length > 0 || outcome.applied.length === 0) return outcome;
    return { ...outcome, run: handle };
  }

  /** Waits for every active run to end. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.activeByRun.values()].map((run) => run.done));
  }

  private async threadOf(id: string): Promise<string> {
    const active = this.activeByRun.get(id) ?? this.activeByThread.get(id);
    if (active) return active.identity.threadId;
    const run = await this.persistence.getRun(id);
    if (run) return run.identity.threadId;
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
          threadId: `${context.identity.threadId}~${delegate.id}~${context.toolCallId}`,
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

function normaliseInput(input: RunInput | undefined): Message[] {
  if (input === undefined) return [];
  if (typeof input === 'string') {
    const message: UserMessage = { id: createId(), role: 'user', content: [{ type: 'text', text: input }] };
    return [message];
  }
  return Array.isArray(input) ? input : [input];
}

/**
 * The handle of a run() that continued nothing (some tickets are still open, or every decision was applied
 * before): it reports the thread's waiting (or finished) run as the store has it.
 */
function settledHandle(
  threadId: string,
  run: RunRecord | undefined,
  tickets: SuspensionTicket[],
  decisions: ResumeDecision[],
  records: Readonly<Record<string, ToolCallRecord>>,
): RunHandle {
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
  let seq = 0;
  const callOfTicket = new Map<string, string>();
  for (const record of Object.values(records))
    if (record.ticket) callOfTicket.set(record.ticket.id, record.toolCallId);
  for (const decision of decisions) {
    stream.push({
      type: 'tool-call-resumed',
      identity,
      seq: seq++,
      toolCallId: callOfTicket.get(decision.ticketId) ?? '',
      decision,
    });
  }
  stream.push({
    type: 'run-end',
    identity,
    seq: seq++,
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
