import type { AssistantMessage, Message } from './messages.js';
import type { ModelRequest, StopReason, Usage } from './model.js';
import type {
  ResumeDecision,
  RunIdentity,
  RunStatus,
  SuspensionTicket,
  TerminationReason,
  ToolCallStatus,
} from './run.js';
import type { ToolResult } from './tools.js';

/**
 * A trace context in a form that can be stored with a run (W3C `traceparent` / `tracestate` entries, as an
 * OpenTelemetry propagator writes them). The runtime stores the one a run hands it when the run suspends, and
 * gives it back to the run that resumes it, in whatever process that is.
 */
export type TraceCarrier = Readonly<Record<string, string>>;

/**
 * Which commit of the tool-call protocol a checkpoint is: `C0` consumes a resume's decisions, `C1` is written
 * before any tool of a step starts, `C2` is the step's checkpoint (its results), `run-end` the run's last.
 */
export type CheckpointKind = 'C0' | 'C1' | 'C2' | 'run-end';

/** How a run got its thread's lease. */
export interface RunLeaseFact {
  /** The fencing token the run writes with. */
  token: number;
  /**
   * True when the run continues one whose process stopped while it was `running` (a crash recovery): its lease
   * replaced the lease of a holder that is gone, by expiry or by a takeover of the same owner.
   */
  takeover: boolean;
}

/** What a run's instrumentation learns when the run starts (or continues). */
export interface RunStartFact {
  identity: RunIdentity;
  /** The provider id of the agent's model, e.g. `openai`. */
  provider: string;
  /** The agent's model id (a request may override it; see {@link ModelCallFact}). */
  model: string;
  /** The agent's description, when it has one. */
  description?: string;
  /** True when the run continues an earlier waiting or interrupted run. */
  resumed: boolean;
  /** The trace context the continued run handed over when it suspended, from any process. */
  suspendedBy?: TraceCarrier;
  /** The run's new input messages. */
  input: readonly Message[];
  /** The thread lease the run holds (absent without a store). */
  lease?: RunLeaseFact;
}

/** One model call of a run. */
export interface ModelCallFact {
  step: number;
  provider: string;
  /** The model the request asks for. */
  model: string;
  request: ModelRequest;
}

/** How a model call ended: with an answer, or with an error. */
export interface ModelCallOutcome {
  /** The answer, when the call completed. */
  message?: AssistantMessage;
  stopReason?: StopReason;
  usage?: Usage;
  /** What the call failed with (an aborted call included). */
  error?: unknown;
}

/** One tool execution of a run. */
export interface ToolCallFact {
  step: number;
  toolCallId: string;
  toolName: string;
  /** The call's raw JSON arguments. */
  arguments: string;
  idempotencyKey: string;
  /** True when an earlier attempt died mid-way and the tool runs again with the same key. */
  rerun: boolean;
  /** The attempt this is, as the execution ledger counts it (1 without a store). */
  attempt: number;
}

/** How a tool execution ended. */
export interface ToolCallOutcome {
  status: ToolCallStatus;
  /** The result, unless the tool suspended for a decision. */
  result?: ToolResult;
  /** True when the tool asked for a decision instead of returning (it runs again once decided). */
  suspended?: boolean;
}

/** A tool call whose result came from the execution ledger or a call record instead of running the tool. */
export interface LedgerHitFact {
  step: number;
  toolCallId: string;
  toolName: string;
  /** `ledger`: a finished execution found in the ledger; `record`: a result kept in the run's call records. */
  source: 'ledger' | 'record';
}

/** What a checkpoint commit wrote, or what it failed with. */
export interface CheckpointOutcome {
  /** Messages appended. */
  messages: number;
  /** Ledger entries written with it. */
  ledgerEntries: number;
  /** Whether the run record was written. */
  runRecord: boolean;
  /** The store's error, when the commit failed (`stale-lease` when fenced by a newer lease). */
  error?: unknown;
}

/** How a run ended (or stopped to wait). */
export interface RunEndFact {
  status: RunStatus;
  termination: TerminationReason;
  steps: number;
  usage: Usage;
  finalText: string;
  openTickets: readonly SuspensionTicket[];
}

/** Something that started and ends later: a model call, a tool execution, a checkpoint commit. */
export interface InstrumentedOperation<Outcome> {
  /** Called once, when the operation ended. Must not throw. */
  end(outcome: Outcome): void;
}

/** A fact about a thread's lease while a run holds it. */
export interface LeaseFact {
  /** `renew`: renewed; `lost`: a renewal failed and the run is aborted. */
  type: 'renew' | 'lost';
  threadId: string;
  token: number;
  /** The store's error of a `lost` lease. */
  error?: unknown;
}

/** A run that could not start because another run holds its thread (`thread-busy`). */
export interface LeaseRejectionFact {
  threadId: string;
  runId: string;
  /** The `thread-busy` error, naming the holder. */
  error: unknown;
}

/**
 * Observes one run: the runtime calls it at each fact it can report. Every method must be cheap and must not
 * throw; the runtime does not await anything it returns.
 */
export interface RunInstrumentation {
  /** A model call starts; returns what to tell when it ends. */
  modelCallStarted(call: ModelCallFact): InstrumentedOperation<ModelCallOutcome> | undefined;
  /** A tool starts executing; returns what to tell when it ends. */
  toolCallStarted(call: ToolCallFact): InstrumentedOperation<ToolCallOutcome> | undefined;
  /** A checkpoint commit starts; returns what to tell when it ends. */
  checkpointStarted(kind: CheckpointKind): InstrumentedOperation<CheckpointOutcome> | undefined;
  /** A tool call got its result without running (see {@link LedgerHitFact}). */
  ledgerHit(fact: LedgerHitFact): void;
  /** A tool call waits for a decision; the ticket is durable. */
  toolCallSuspended(ticket: SuspensionTicket): void;
  /** A decision resumed a suspended tool call. */
  toolCallResumed(toolCallId: string, decision: ResumeDecision): void;
  /** The thread's lease was renewed or lost. */
  lease(fact: LeaseFact): void;
  /**
   * The trace context to store with the run when it suspends (handed back as `suspendedBy` to whatever run
   * resumes it). Called only when the run ends waiting.
   */
  suspendContext(): TraceCarrier | undefined;
  /** The run ended (or stopped to wait); its last checkpoint is written. */
  runEnded(fact: RunEndFact): void;
}

/**
 * Observability for a runtime (tracing, metrics): given to `AgentRuntime` as `instrumentation`, called at the
 * facts the runtime reports. Without one nothing is built or called.
 */
export interface Instrumentation {
  /** A run starts or continues; returns its observer, or undefined to leave the run unobserved. */
  runStarted(fact: RunStartFact): RunInstrumentation | undefined;
  /** A run could not take its thread's lease (the thread is busy in another process). */
  leaseRejected?(fact: LeaseRejectionFact): void;
}
