import {
  type Clock,
  type JsonValue,
  LunationError,
  type ResumeDecision,
  type RunIdentity,
  type ToolCallStatus,
  type ToolResult,
} from '@lunation/contract';
import type { ToolErrorPolicy } from '../agent.js';
import { type BackgroundTasks, type TaskRecord, tasksKey } from '../background-tasks.js';
import type { Command } from '../command.js';
import { noTransactions } from '../persistence.js';
import type { StateSnapshot } from '../state.js';
import { type AnyTool, type TicketInput, type ToolContext, ToolOutput } from '../tool.js';
import { errorResult } from './call-plan.js';
import type { RunScope } from './run-scope.js';
import { checkToolResult, describeThrown, isLunationError, toStorableJson } from './storable.js';
import type { ToolClock, Watch } from './tool-clock.js';

/** How one execution of a tool ended. */
export interface Invocation {
  status: Extract<ToolCallStatus, 'succeeded' | 'failed' | 'cancelled' | 'abandoned'>;
  result: ToolResult;
  /** A state command the tool returned with its result. */
  command?: Command;
  /** The tool asked for a decision instead of finishing. */
  suspend?: TicketInput;
}

/** How an execution ended when it did not return: it threw, or it was abandoned. */
class Thrown {
  constructor(readonly error: unknown) {}
}
const ABANDONED = Symbol('abandoned');

function isThrown(value: unknown): value is Thrown {
  try {
    return value instanceof Thrown;
  } catch {
    return false; // a Proxy whose getPrototypeOf throws: a value, which fromValue() rejects
  }
}

/**
 * Executes one tool call: under its timeout and the run's cancellation (a call that does not settle within
 * the grace period is abandoned), with the tool's error policy (retries), turning whatever the tool returns
 * or throws into a storable result. Never throws.
 */
export async function invokeTool(request: ToolCallContext): Promise<Invocation> {
  const { scope, clock } = request;
  const watch: Watch = request;
  clock.watch(watch);
  try {
    for (let attempt = 0; ; attempt++) {
      let settled: unknown;
      try {
        settled = await execute(request, watch);
      } catch (error) {
        settled = new Thrown(error); // a resolved value whose `then` throws (a hostile Proxy)
      }
      if (settled === ABANDONED) return abandoned(request, watch);
      if (!isThrown(settled)) return fromValue(settled, request);
      const { error } = settled;
      if (watch.cancelled) {
        return {
          status: 'cancelled',
          result: errorResult('Cancelled: the run was cancelled while this call ran.', { cancelled: true }),
        };
      }
      if (watch.timedOut) {
        return {
          status: 'failed',
          result: errorResult(`Tool "${request.toolName}" timed out after ${request.timeoutMs} ms.`, {
            timedOut: true,
          }),
        };
      }
      const { policy } = request;
      if (policy.policy === 'retry' && isRetryable(error) && attempt < (policy.maxRetries ?? 2)) {
        if (await backoff(scope.clock, (policy.backoffMs ?? 100) * 2 ** attempt, scope.signal)) continue;
      }
      return { status: 'failed', result: thrownResult(request.toolName, error, attempt) };
    }
  } finally {
    // The call's outcome is decided: a transaction still open can no longer commit (one committing ends first).
    const ending = request.giveUpTransaction('returned');
    if (ending) await ending;
    clock.release(watch);
  }
}

/**
 * Runs the tool once: its value, a `Thrown`, or ABANDONED when the clock gave up on it. A synchronous result
 * is returned as it is; an asynchronous one is awaited through one promise the clock can also settle.
 */
function execute(request: ToolCallContext, watch: Watch): unknown | Promise<unknown> {
  let value: unknown;
  try {
    value = request.tool.execute(request.input, request);
  } catch (error) {
    return new Thrown(error);
  }
  if (!isPromiseLike(value)) return value;
  return new Promise<unknown>((resolve, reject) => {
    watch.abandon = () => {
      // Given up: an open transaction rolls back; one already committing is waited for (its result stands).
      const ending = request.giveUpTransaction(watch.timedOut ? 'timed out' : 'cancelled');
      if (ending) ending.then(() => resolve(ABANDONED));
      else resolve(ABANDONED);
    };
    value.then(resolve, reject); // a rejection is caught by the caller's await
  });
}

function fromValue(value: unknown, request: ToolCallContext): Invocation {
  try {
    return shapeValue(value, request);
  } catch (error) {
    return {
      status: 'failed',
      result: errorResult(
        `Tool "${request.toolName}" returned a value that cannot be stored: ${describeThrown(error)}.`,
      ),
    };
  }
}

function shapeValue(value: unknown, request: ToolCallContext): Invocation {
  if (ToolOutput.isInstance(value)) {
    if (value.suspend && !request.decision) {
      return { status: 'succeeded', result: { status: 'pending' }, suspend: value.suspend };
    }
    const checked = checkToolResult(value.result);
    if (!checked.ok) {
      return {
        status: 'failed',
        result: errorResult(
          `Tool "${request.toolName}" returned a result that cannot be stored: ${checked.problem}.`,
        ),
      };
    }
    return {
      status: checked.value.status === 'error' ? 'failed' : 'succeeded',
      result: checked.value,
      ...(value.command ? { command: value.command } : {}),
    };
  }
  const data = toStorableJson(value);
  if (!data.ok) {
    return {
      status: 'failed',
      result: errorResult(
        `Tool "${request.toolName}" returned a value that cannot be stored: ${data.problem}.`,
      ),
    };
  }
  return {
    status: 'succeeded',
    result: data.value === undefined ? { status: 'success' } : { status: 'success', data: data.value },
  };
}

function abandoned(request: ToolCallContext, watch: Watch): Invocation {
  const why = watch.timedOut ? `timed out after ${request.timeoutMs} ms` : 'was cancelled';
  return {
    status: 'abandoned',
    result: errorResult(
      `Tool "${request.toolName}" ${why} and did not stop; it was abandoned and its outcome is unknown.`,
      { abandoned: true, ...(watch.timedOut ? { timedOut: true } : { cancelled: true }) },
    ),
  };
}

function thrownResult(toolName: string, error: unknown, attempt: number): ToolResult {
  const metadata: Record<string, JsonValue> = {};
  if (isLunationError(error)) {
    metadata.code = error.code;
    metadata.retryable = error.isRetryable;
  }
  if (attempt > 0) metadata.attempts = attempt + 1;
  return errorResult(
    `Tool "${toolName}" failed: ${describeThrown(error)}`,
    Object.keys(metadata).length > 0 ? metadata : undefined,
  );
}

function isRetryable(error: unknown): boolean {
  try {
    if (isLunationError(error)) return error.isRetryable;
    return (error as { retryable?: unknown } | null)?.retryable === true;
  } catch {
    return false;
  }
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  try {
    return (
      value !== null &&
      (typeof value === 'object' || typeof value === 'function') &&
      typeof (value as { then?: unknown }).then === 'function'
    );
  } catch {
    return false; // a hostile value; fromValue() says it cannot be stored
  }
}

/** Waits before a retry; false when the run was cancelled meanwhile. */
function backoff(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  return clock.sleep(ms, signal).then(
    () => true,
    () => false,
  );
}

/** What one execution of a tool runs with (built once per call, by `ToolRunner.invoke`). */
export interface ToolCallOptions {
  scope: RunScope;
  clock: ToolClock;
  tool: AnyTool;
  /** The parsed and validated arguments. */
  input: unknown;
  /** The provider's id of the call. */
  toolCallId: string;
  /** The runtime's id of the call (`toolCallIdentity`). */
  callId: string;
  /** The run whose ledger holds the call. */
  ledgerRunId: string;
  toolName: string;
  idempotencyKey: string;
  /** Whether an earlier attempt started it. */
  rerun: boolean;
  decision: ResumeDecision | undefined;
  timeoutMs: number;
  policy: ToolErrorPolicy;
}

/**
 * One execution of a tool: what `invokeTool` runs (the tool, its input, its time limit and error policy), the
 * context the tool sees, and the clock's watch of it.
 */
export class ToolCallContext implements ToolContext, Watch {
  /** @internal (the fields below, to `abandon`, are the clock's) */
  deadline = Number.POSITIVE_INFINITY;
  /** @internal */
  timedOut = false;
  /** @internal */
  cancelled = false;
  /** @internal */
  abandonAt = 0;
  /** @internal */
  controller: AbortController | undefined = undefined;
  /** @internal */
  abandon: (() => void) | undefined = undefined;
  private backgroundTasks: BackgroundTasks | undefined;
  private snapshot: StateSnapshot | undefined;
  /** The result a transactional effect committed with the ledger completion (it is the call's result). */
  committed: ToolResult | undefined = undefined;
  private transacted = false;
  /** The call's transaction while it is open: aborted when the runtime gives up on the call. */
  private openTransaction: OpenTransaction | undefined = undefined;
  /** Why the runtime gave up on the call (no transaction may start or commit after it). */
  private givenUp: GiveUp | undefined = undefined;

  // Set by the constructor, so not defined before it (see `RunScope`).
  /** @internal */
  declare readonly scope: RunScope;
  /** @internal */
  declare readonly clock: ToolClock;
  /** @internal */
  declare readonly tool: AnyTool;
  /** @internal the parsed and validated arguments */
  declare readonly input: unknown;
  declare readonly toolCallId: string;
  declare readonly callId: string;
  /** @internal the run whose ledger holds the call */
  declare readonly ledgerRunId: string;
  declare readonly toolName: string;
  declare readonly idempotencyKey: string;
  declare readonly rerun: boolean;
  declare readonly decision: ResumeDecision | undefined;
  /** @internal */
  declare readonly timeoutMs: number;
  /** @internal */
  declare readonly policy: ToolErrorPolicy;

  constructor(options: ToolCallOptions) {
    this.scope = options.scope;
    this.clock = options.clock;
    this.tool = options.tool;
    this.input = options.input;
    this.toolCallId = options.toolCallId;
    this.callId = options.callId;
    this.ledgerRunId = options.ledgerRunId;
    this.toolName = options.toolName;
    this.idempotencyKey = options.idempotencyKey;
    this.rerun = options.rerun;
    this.decision = options.decision;
    this.timeoutMs = options.timeoutMs;
    this.policy = options.policy;
  }

  get identity(): RunIdentity {
    return this.scope.identity;
  }

  get fencingToken(): number | undefined {
    return this.scope.options.leaseToken;
  }

  /** Aborted when the call times out or the run is cancelled. */
  get signal(): AbortSignal {
    return this.clock.signalFor(this);
  }

  /** The state as the call started (taken when first read). */
  get state(): StateSnapshot {
    if (!this.snapshot) this.snapshot = this.scope.state.snapshot();
    return this.snapshot;
  }

  get background(): BackgroundTasks {
    if (!this.backgroundTasks) this.backgroundTasks = backgroundFor(this.scope, this.toolCallId);
    return this.backgroundTasks;
  }

  reportProgress(progress: JsonValue): void {
    if (!this.scope.listening) return;
    const stored = toStorableJson(progress);
    this.scope.emit({
      type: 'tool-progress',
      toolCallId: this.toolCallId,
      toolName: this.toolName,
      progress: stored.ok ? (stored.value ?? null) : `(progress that cannot be shown: ${stored.problem})`,
    });
  }

  async transaction<Result, Transaction = unknown>(
    effect: (transaction: Transaction) => Promise<Result>,
  ): Promise<Result> {
    const { scope } = this;
    if (!scope.durable) throw noTransactions(undefined);
    if (this.transacted) {
      throw new LunationError(
        'invalid-argument',
        `Tool call ${this.callId} ("${this.toolName}") already ran its transaction; a call commits one transaction, with its completion`,
      );
    }
    if (this.givenUp) throw this.givenUpError();
    this.transacted = true;
    const { persistence, leaseToken } = scope.options;
    const open: OpenTransaction = { controller: new AbortController(), committing: false, ended: undefined };
    let value: Result | undefined;
    const committed = persistence.completeToolWithEffect(
      {
        runId: this.ledgerRunId,
        toolCallId: this.callId,
        ...(leaseToken === undefined ? {} : { leaseToken }),
        signal: open.controller.signal,
      },
      async (transaction) => {
        value = await effect(transaction as Transaction);
        const stored = toStorableJson(value);
        if (!stored.ok) {
          throw new LunationError(
            'invalid-argument',
            `The transaction's result cannot be stored: ${stored.problem}; nothing was written`,
          );
        }
        if (this.givenUp) throw this.givenUpError();
        // From here the completion commits: the runtime waits for it rather than give up on the call.
        open.committing = true;
        return { status: 'success', ...(stored.value === undefined ? {} : { data: stored.value }) };
      },
    );
    open.ended = committed.then((entry) => {
      this.committed = entry.result;
    }, nothing);
    this.openTransaction = open;
    let entry: Awaited<typeof committed>;
    try {
      entry = await committed;
    } finally {
      if (this.openTransaction === open) this.openTransaction = undefined;
    }
    this.committed = entry.result;
    // An earlier attempt committed it: its recorded result stands, the effect did not run again.
    return (value === undefined ? entry.result?.data : value) as Result;
  }

  /**
   * @internal The runtime gave up on the call (it returned, timed out or was cancelled): from now on its
   * transaction cannot start or commit. An open one rolls back (its effect's further statements fail with a
   * `cancelled` error); one already committing is waited for, and its result stands (`committed`).
   */
  giveUpTransaction(why: GiveUp): Promise<void> | undefined {
    const open = this.openTransaction;
    if (open?.committing) return open.ended;
    this.givenUp ??= why;
    if (!open) return undefined;
    open.controller.abort(this.givenUpError());
    return open.ended;
  }

  private givenUpError(): LunationError {
    const why = this.givenUp;
    const how =
      why === 'timed out'
        ? `timed out after ${this.timeoutMs} ms`
        : why === 'cancelled'
          ? 'was cancelled with its run'
          : 'already has its outcome';
    return new LunationError(
      'cancelled',
      `Tool call ${this.callId} ("${this.toolName}") ${how}: the runtime gave up on it, so its transaction rolled back and cannot be used or committed`,
      { details: { toolCallId: this.toolCallId, callId: this.callId, toolName: this.toolName } },
    );
  }

  suspend(ticket: TicketInput): ToolOutput {
    return new ToolOutput({ status: 'pending' }, undefined, ticket);
  }

  output(result: ToolResult, command?: Command): ToolOutput {
    return new ToolOutput(result, command);
  }
}

/** Why the runtime gave up on a call. */
type GiveUp = 'returned' | 'timed out' | 'cancelled';

/** A call's transaction on its way to commit. */
interface OpenTransaction {
  readonly controller: AbortController;
  /** The effect returned: the completion is being written, and the runtime waits for it. */
  committing: boolean;
  /** Settles (never rejects) when the store's call has ended. */
  ended: Promise<void> | undefined;
}

function nothing(): void {}

/** Background tasks started by a tool: recorded in thread state, run by this process's task host. */
function backgroundFor(scope: RunScope, toolCallId: string): BackgroundTasks {
  const host = scope.options.tasks;
  const record = (task: TaskRecord) => {
    if (!scope.state.isRegistered(tasksKey)) scope.state.register(tasksKey);
    scope.state.write([{ key: tasksKey, update: task }]);
    return task.id;
  };
  const unavailable = (): never => {
    throw new LunationError(
      'invalid-argument',
      `Background tasks are not available to tool call ${toolCallId}`,
    );
  };
  return {
    spawn: (name, work) => (host ? record(host.spawn(scope.identity, name, work)) : unavailable()),
    spawnAgent: (agentId, task) =>
      host ? record(host.spawnAgent(scope.identity, agentId, task)) : unavailable(),
  };
}
