import {
  type AgentEvent,
  addUsage,
  type Clock,
  emptyUsage,
  type IdSource,
  type JsonSchema,
  type JsonValue,
  LunationError,
  type Message,
  type ResumeDecision,
  type RunIdentity,
  type RunInstrumentation,
  type RunRecord,
  type RunStatus,
  type StopReason,
  type SuspensionTicket,
  systemClock,
  systemIds,
  type TerminationReason,
  type ToolDescriptor,
  type ToolResult,
  toErrorInfo,
  type Usage,
} from '@lunation/contract';
import type { z } from 'zod';
import type { ResolvedAgent } from '../agent.js';
import type { TaskHost, TaskRecord } from '../background-tasks.js';
import type { Persistence } from '../persistence.js';
import { type PhaseContextBase, PhaseEngine } from '../phase-engine.js';
import type { AgentView, ModelResponse, Plugin } from '../plugin.js';
import { activeAgentKey, type RunProgress, runProgressKey } from '../runtime-keys.js';
import { StateStore } from '../state.js';
import type { LeaseCheck } from '../thread-lease.js';
import { RunJournal, type RunJournalRunner, withoutJournal } from './run-journal.js';
import { isLunationError } from './storable.js';

/** A tool executed by the caller's client: the model sees the descriptor; a call suspends for its result. */
export interface FrontendTool extends ToolDescriptor {
  /** JSON Schema the client's result (the decision payload) must satisfy. */
  responseSchema?: JsonSchema;
}

/**
 * The AbortController of a run: also calls one plain callback when aborted, which the loop uses instead of an
 * `abort` event listener (on Node 20 adding a listener to an AbortSignal costs microseconds, paid per run).
 */
export class RunAbortController extends AbortController {
  private listener: (() => void) | undefined;

  /** Calls `listener` once, right after the abort (at once when already aborted). Replaces an earlier one. */
  onAbort(listener: () => void): void {
    if (this.signal.aborted) listener();
    else this.listener = listener;
  }

  override abort(reason?: unknown): void {
    if (this.signal.aborted) return;
    super.abort(reason);
    const listener = this.listener;
    this.listener = undefined;
    listener?.();
  }
}

/** Everything one run needs; assembled by AgentRuntime. */
export interface RunLoopOptions {
  identity: RunIdentity;
  agent: ResolvedAgent;
  /** The agent with this id, for a handoff. */
  resolveAgent(agentId: string): ResolvedAgent;
  persistence: Persistence;
  leaseToken: number | undefined;
  /** Whether the lease `leaseToken` is still provably held here (with a store): asked before each side effect. */
  leases?: LeaseCheck | undefined;
  /** Who runs it (lease owner and instance), for the run's journal. */
  runner?: RunJournalRunner | undefined;
  /** The thread's committed messages. */
  history: Message[];
  /** New input messages of this run. */
  input: Message[];
  threadState: Record<string, unknown>;
  /** The run record being continued (resume after suspension, or recovery after a crash). */
  previous: RunRecord | undefined;
  /** Validated decisions for open tickets. */
  decisions: ResumeDecision[];
  /**
   * The waiting run this run's new input replaces (no decisions came): the resume stage answers its open calls
   * and ends it `cancelled` in one commit before the input joins the thread.
   */
  superseded?: RunRecord | undefined;
  frontendTools: FrontendTool[];
  signal: AbortSignal;
  /**
   * The controller of `signal`, when it can call the loop directly on abort (a run's `RunAbortController`):
   * cheaper than an abort listener, which the loop adds otherwise.
   */
  controller?: {
    /** Calls `listener` once, right after the abort (at once when already aborted). */
    onAbort(listener: () => void): void;
    /** Aborts the run (a lease found stale stops it with `lease-lost`). */
    abort(reason?: unknown): void;
  };
  /** Receives every event of the run. */
  emit(event: AgentEvent): void;
  registryVersion: number | undefined;
  emitStateSnapshots: boolean;
  /** Live background tasks of this process. */
  tasks?: TaskHost;
  /** Results of background tasks that finished while no run was active. */
  taskResults?: TaskRecord[];
  /** False when nobody consumes events: the loop then skips building them. @default true */
  listening?: boolean;
  /** Stay open after a reply and wait for more input (a session), until `close()`. */
  keepAlive?: boolean;
  /** Called each time a kept-alive run has answered and waits for input. */
  onTurnEnd?(turn: { finalText: string; steps: number; usage: Usage }): void;
  /** This run's output schema (overrides the agent's). */
  output?: z.ZodType;
  /** The run's observer (from the runtime's `instrumentation`); nothing is reported without one. */
  instrumentation?: RunInstrumentation | undefined;
  /** When the thread's latest run was created (by any process's clock): a new run is created after it. */
  latestCreatedAt?: number | undefined;
  /** Where the run reads time and sets its timers (the runtime's `clock`). @default systemClock */
  clock?: Clock;
  /** Where the run's ids come from (the runtime's `ids`). @default systemIds */
  ids?: IdSource;
}

/** A step's usage before its first model call: shared (usage values are never changed, only summed anew). */
export const NO_USAGE: Usage = Object.freeze(emptyUsage());

/** What a run ended with. */
export interface RunResult<Output = unknown> {
  identity: RunIdentity;
  status: RunStatus;
  termination: TerminationReason;
  finalText: string;
  steps: number;
  usage: Usage;
  openTickets: SuspensionTicket[];
  /** Messages this run added to the thread. */
  messages: Message[];
  /** The validated structured output, for a run with an output schema that ended with one. */
  output?: Output;
}

type EventInput = Record<string, unknown> & { type: AgentEvent['type'] };

/**
 * The state one run shares across its stages: the agent (which a handoff may change), its plugins' engine,
 * the typed state, the conversation, progress counters and the event stream.
 */
export class RunScope {
  // Fields the constructor sets are `declare`d: a class field is defined (as undefined) before the constructor
  // runs, which costs one more property store per field and run while the run's code is not optimized yet.
  declare agent: ResolvedAgent;
  declare engine: PhaseEngine;
  declare agentView: AgentView;
  declare readonly state: StateStore;
  /** The thread's history plus this run's messages so far. */
  declare readonly messages: Message[];
  /** Messages this run added. */
  readonly runMessages: Message[] = [];
  declare readonly progress: RunProgress;
  /**
   * The current step's own usage (its model calls, a compaction's included); `progress.usage` is the run's. A new
   * step starts from `NO_USAGE` with `stepUsageUnknown` false (`AgentLoop.startStep`).
   */
  stepUsage: Usage = NO_USAGE;
  /** A model call of the current step reported no usage (its provider could not tell): `stepUsage` lacks it. */
  stepUsageUnknown = false;
  /** Whether anyone receives events (a buffered stream, a sink or a callback); if not, none are built. */
  declare readonly listening: boolean;
  finalText = '';
  lastStopReason: StopReason | undefined;
  /** Set when a tool failed under the `stop` error policy. */
  toolErrorStop: string | undefined;
  /** The validated structured output, once the run has it. */
  output: JsonValue | undefined;
  /** The run's observer, when the runtime has instrumentation. */
  declare readonly instrumentation: RunInstrumentation | undefined;
  /**
   * The run's journal, in its step messages and each run record the checkpointer writes; none without a durable
   * store, where no run record can be read back (it would only cost the run time and memory).
   */
  declare readonly journal: RunJournal | undefined;
  declare readonly clock: Clock;
  declare readonly ids: IdSource;
  /** The run's identity, its abort signal and whether its store is durable: read on every step, kept as fields. */
  declare readonly identity: RunIdentity;
  declare readonly signal: AbortSignal;
  declare readonly durable: boolean;
  /** Whether the run holds a lease it must keep checking (a store and a token): false keeps `holdsLease` cheap. */
  declare private readonly leased: boolean;
  private seq = 0;
  /** The step whose `step-end` was emitted last (-1: none yet). */
  private stepEnded = -1;

  constructor(readonly options: RunLoopOptions) {
    this.identity = options.identity;
    this.signal = options.signal;
    this.durable = options.persistence.durable;
    this.leased = options.leases !== undefined && options.leaseToken !== undefined;
    this.listening = options.listening ?? true;
    this.instrumentation = options.instrumentation;
    this.clock = options.clock ?? systemClock;
    this.ids = options.ids ?? systemIds;
    this.journal = options.persistence.durable ? new RunJournal(this.clock, options) : undefined;
    this.agent = options.agent;
    this.state = new StateStore(this.agent.plugins.keys);
    this.state.restore(options.threadState);
    if (options.previous) this.state.restore(withoutJournal(options.previous.state));
    this.engine = this.createEngine();
    this.agentView = agentViewOf(this.agent);
    this.messages = options.history;
    this.progress = {
      step: options.previous?.steps ?? 0,
      usage: options.previous?.usage ?? emptyUsage(),
      consecutiveToolErrors: 0,
      startedAt: this.clock.now(),
    };
  }

  /** Counts a model call's usage toward the current step and the run. */
  addUsage(usage: Usage): void {
    // A step's first usage is kept as it is: usage values are never changed, only summed anew.
    this.stepUsage = this.stepUsage === NO_USAGE ? usage : addUsage(this.stepUsage, usage);
    this.progress.usage = addUsage(this.progress.usage, usage);
  }

  /** A model call's usage part: counted, unless the provider says it is unknown (its numbers are not counts). */
  addUsagePart(part: { usage: Usage; unknown?: boolean }): void {
    if (part.unknown === true) this.stepUsageUnknown = true;
    else this.addUsage(part.usage);
  }

  /** The progress changed: it is written to state before the state is next read (once, however often it changes). */
  progressChanged(): void {
    this.state.writeBeforeRead(runProgressKey, this.writeProgress);
  }

  private readonly writeProgress = (): void => {
    this.state.write([{ key: runProgressKey, update: { ...this.progress } }]);
  };

  /**
   * Whether this process may start a side effect (a tool, a model call) for the run: its thread's lease is still
   * provably held here. A lease gone stale (the process stalled past it) stops the run with `lease-lost` and
   * answers false; the loop then writes nothing more (see {@link leaseLost}).
   */
  holdsLease(): boolean {
    const lost = this.leaseLost;
    if (!this.leased || lost) return !lost;
    const { leases, leaseToken, identity } = this.options;
    if ((leases as LeaseCheck).fresh(identity.threadId, leaseToken as number)) return true;
    const error = new LunationError(
      'lease-lost',
      `The lease of thread "${identity.threadId}" is no longer provably held here (this process was too slow to renew it); the run stops before its next side effect and the process holding the thread continues it from the store.`,
      { details: { threadId: identity.threadId, runId: identity.runId, token: leaseToken } },
    );
    const { controller } = this.options;
    if (controller) controller.abort(error);
    return false;
  }

  /**
   * The run lost its thread's lease (a renewal failed or came too late): another process may continue it, so
   * this one writes nothing more for it and leaves the store as it is, as a crash would.
   */
  get leaseLost(): boolean {
    const { signal } = this;
    return signal.aborted && isLunationError(signal.reason) && signal.reason.code === 'lease-lost';
  }

  emit(event: EventInput): void {
    const target = event as unknown as { identity: RunIdentity; seq: number };
    target.identity = this.identity;
    target.seq = this.seq++;
    this.options.emit(event as unknown as AgentEvent);
  }

  /** Emits `step-end` (with a state snapshot first, when asked for) once per step. */
  emitStepEnd(): void {
    if (!this.listening) return;
    // Once per step: a kept-alive run reports its step when it waits, and must not again when input comes.
    const { step } = this.progress;
    if (this.stepEnded === step) return;
    this.stepEnded = step;
    if (this.options.emitStateSnapshots) {
      const snapshot = this.state.snapshot();
      this.emit({
        type: 'state-snapshot',
        revision: snapshot.revision,
        state: { ...snapshot.export('thread'), ...snapshot.export('run') },
      });
    }
    const event: EventInput = {
      type: 'step-end',
      step,
      stopReason: this.lastStopReason,
      usage: this.stepUsage,
    };
    if (this.stepUsageUnknown) event.usageUnknown = true;
    this.emit(event);
  }

  /** Reports a non-fatal problem on the event stream. */
  emitError(error: unknown): void {
    if (this.listening) this.emit({ type: 'error', error: toErrorInfo(error) });
  }

  append(message: Message): void {
    this.messages.push(message);
    this.runMessages.push(message);
  }

  /** The context every hook of a phase gets. */
  base(
    response?: ModelResponse,
    toolCall?: PhaseContextBase['toolCall'],
    toolResult?: ToolResult,
    decision?: ResumeDecision,
  ): PhaseContextBase {
    return {
      decision,
      identity: this.identity,
      messages: this.messages,
      agent: this.agentView,
      step: this.progress.step,
      signal: this.signal,
      response,
      toolCall,
      toolResult,
    };
  }

  /** A handoff changed the thread's active agent: run the next steps with it. */
  switchAgentIfHandedOff(): void {
    const active = this.state.peek(activeAgentKey);
    if (active === null || active === this.agent.id) return;
    this.agent = this.options.resolveAgent(active);
    for (const key of this.agent.plugins.keys.values()) {
      if (!this.state.isRegistered(key)) this.state.register(key);
    }
    this.engine = this.createEngine();
    this.agentView = agentViewOf(this.agent);
  }

  private createEngine(): PhaseEngine {
    return new PhaseEngine(this.agent.plugins, this.state, (error) => this.emitError(error));
  }
}

/** What hooks see of an agent: made once per resolved agent, shared by its runs. */
const agentViews = new WeakMap<ResolvedAgent, AgentView>();

function agentViewOf(agent: ResolvedAgent): AgentView {
  let view = agentViews.get(agent);
  if (view === undefined) {
    view = Object.freeze({
      id: agent.id,
      systemPrompt: agent.definition.systemPrompt,
      config: <Config>(plugin: Plugin<Config> | string) =>
        agent.plugins.configs.get(typeof plugin === 'string' ? plugin : plugin.name) as Config,
    });
    agentViews.set(agent, view);
  }
  return view;
}

/** The reason an aborted signal carries, as text. */
export function abortReason(signal: AbortSignal): string | undefined {
  const reason = signal.reason;
  if (reason === undefined) return undefined;
  if (typeof reason === 'string') return reason;
  if (reason instanceof Error) return reason.message;
  return undefined;
}
