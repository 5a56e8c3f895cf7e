import {
  type CheckpointCommit,
  type CheckpointKind,
  type CheckpointOutcome,
  type RunRecord,
  type RunStatus,
  type TerminationReason,
  type ToolCall,
  type ToolExecution,
  type ToolResult,
  toolCallIdentity,
} from '@lunation/contract';
import type { CallPlan } from './call-plan.js';
import { openTickets, toolCallsKey } from './call-records.js';
import type { RunScope } from './run-scope.js';

/**
 * Stable per tool call, across re-runs after a crash: the run and the call's identity (`toolCallIdentity(call)`:
 * the runtime's `callId`, or the provider's id for calls stored before there was one).
 */
export function idempotencyKey(runId: string, callId: string): string {
  return `${runId}:${callId}`;
}

/**
 * Writes the run to the store: checkpoints (messages since the last one, thread state when it changed, the run
 * record, ledger entries riding along) and single ledger writes. Knows what the store already has.
 */
export class Checkpointer {
  // Set by the constructor, so not defined before it (see `RunScope`).
  declare private readonly scope: RunScope;
  declare private committedCount: number;
  declare private lastThreadRevision: number;
  /**
   * Whether this process wrote the run record: even a continued run's is written with its first commit, whose
   * journal names the runner of the messages this process commits.
   */
  private runWritten = false;
  /** Ticket ids of the open tickets the stored run record lists. */
  declare private writtenTickets: string;
  /** The status the stored run record has. */
  declare private writtenStatus: RunStatus | undefined;
  declare private readonly createdAt: number;
  /** Ledger entries to write with the next commit (undefined: none). */
  private riding: ToolExecution[] | undefined;
  /** The ending of a superseded run whose C0 has not reached the store yet (it failed). */
  private superseding: RunRecord | undefined;

  constructor(scope: RunScope) {
    this.scope = scope;
    const { previous, history } = scope.options;
    this.committedCount = history.length;
    this.lastThreadRevision = scope.state.threadRevision;
    this.writtenTickets = previous ? ticketSignature(previous.openTickets) : '';
    this.writtenStatus = previous?.status;
    // A new run is created after the thread's latest run even when this process's clock is behind the one that
    // created that run (clock skew): stores order a thread's runs by `createdAt`.
    const latest = scope.options.latestCreatedAt ?? Number.NEGATIVE_INFINITY;
    this.createdAt = previous?.createdAt ?? Math.max(scope.clock.now(), latest + 1);
  }

  /**
   * C1, or C0 when resuming: claims each call that starts now (an in-flight ledger entry riding in the commit,
   * its `execution`), then commits the call records and whatever the step added — one commit, before any tool
   * starts; none when nothing changed.
   */
  commitOutcomes(starting: readonly CallPlan[], stage: 'C0' | 'C1'): Promise<void> {
    for (const plan of starting) plan.execution = this.claim(plan.runId, plan.call);
    if (starting.length === 0 && !this.hasUncommitted() && !this.stateChanged()) return DONE;
    return stage === 'C0' ? this.commitDecisions('running') : this.commitGateOutcomes();
  }

  /** The ledger entry of a call about to start, written with the commit before any tool starts (C1 or C0). */
  private claim(runId: string, call: ToolCall): ToolExecution {
    const callId = toolCallIdentity(call);
    const entry: ToolExecution = {
      runId,
      toolCallId: callId,
      threadId: this.scope.identity.threadId,
      toolName: call.toolName,
      idempotencyKey: idempotencyKey(runId, callId),
      status: 'in-flight',
      attempts: 1,
      startedAt: this.scope.clock.now(),
    };
    this.addRiding(entry);
    return entry;
  }

  /** Records a start right now (resume and recovery): returns the entry as the store has it. */
  async begin(runId: string, call: ToolCall): Promise<ToolExecution | undefined> {
    const { persistence, leaseToken } = this.scope.options;
    return persistence.beginTool({
      runId,
      toolCallId: toolCallIdentity(call),
      threadId: this.scope.identity.threadId,
      toolName: call.toolName,
      idempotencyKey: idempotencyKey(runId, toolCallIdentity(call)),
      ...(leaseToken === undefined ? {} : { leaseToken }),
    });
  }

  /** What the ledger says of a call (recovery only). */
  lookup(runId: string, call: ToolCall): Promise<ToolExecution | undefined> {
    return this.scope.options.persistence.getTool(runId, toolCallIdentity(call));
  }

  /** A finished call's ledger completion, as it rides in a commit. */
  completion(entry: ToolExecution, result: ToolResult): ToolExecution {
    return { ...entry, status: 'completed', result, completedAt: this.scope.clock.now() };
  }

  /** Lets a completion ride in the next checkpoint (the last call of a step: the step's end is next). */
  ride(entry: ToolExecution): void {
    this.addRiding(entry);
  }

  private addRiding(entry: ToolExecution): void {
    if (this.riding === undefined) this.riding = [entry];
    else this.riding.push(entry);
  }

  /** Writes a completion at once: a finished side effect is durable before the next one starts. */
  async complete(entry: ToolExecution): Promise<void> {
    const { persistence, leaseToken } = this.scope.options;
    await persistence.completeTool({
      runId: entry.runId,
      toolCallId: entry.toolCallId,
      result: entry.result as ToolResult,
      ...(leaseToken === undefined ? {} : { leaseToken }),
    });
  }

  /** Whether the thread state changed since the last commit. */
  stateChanged(): boolean {
    return this.scope.state.threadRevision !== this.lastThreadRevision;
  }

  /** Whether the run has messages the store does not have yet. */
  hasUncommitted(): boolean {
    return this.scope.messages.length > this.committedCount;
  }

  /** Whether the store's run record lists different open tickets than the call records now do. */
  ticketsChanged(): boolean {
    return ticketSignature(this.currentTickets()) !== this.writtenTickets;
  }

  runRecord(status: RunStatus, termination: TerminationReason | undefined): RunRecord {
    const { scope } = this;
    const { options, progress } = scope;
    const record: RunRecord = {
      identity: options.identity,
      status,
      steps: progress.step,
      usage: progress.usage,
      openTickets: this.currentTickets(),
      state: scope.state.exportScope('run'),
      finalText: scope.finalText,
      createdAt: this.createdAt,
      updatedAt: scope.clock.now(),
    };
    if (termination !== undefined) record.termination = termination;
    if (scope.output !== undefined) record.output = scope.output;
    if (options.registryVersion !== undefined) record.registryVersion = options.registryVersion;
    scope.journal?.stamp(record, scope.messages);
    return record;
  }

  /**
   * **C0**, a resume's first commit: the decisions consumed (call records `resuming` or settled, the decision
   * ids applied), an in-flight ledger entry for each call that starts now, and the run record when its status or
   * open tickets changed — before any resumed call starts. `waiting` when tickets of the step stay open: the
   * run record lists exactly those, and nothing runs until they are decided.
   */
  commitDecisions(run: 'running' | 'waiting'): Promise<void> {
    return run === 'running'
      ? this.write('C0', this.ownRun('running', undefined, 'when-stale'))
      : this.write('C0', this.ownRun('waiting', SUSPENDED, 'when-stale'));
  }

  /**
   * **C1**, a fresh step's first commit: the assistant message, each call's gate outcome (call records), an
   * in-flight ledger entry for each call about to start, and the run record when its status or open tickets
   * changed — before any tool of the step starts.
   */
  commitGateOutcomes(): Promise<void> {
    return this.write('C1', this.ownRun('running', undefined, 'when-stale'));
  }

  /**
   * **C2**, the step's checkpoint: the tool message, the completions still riding, the cleared call records and
   * the run record (`running`) — before the next model call.
   */
  commitStepEnd(): Promise<void> {
    return this.write('C2', this.ownRun('running', undefined, 'always'));
  }

  /**
   * **C0** when new input replaces a waiting run: the tool message answering its open calls, the cleared call
   * records and that run's record ended `cancelled` — one commit, before the input joins the thread. This run's
   * own record is written with its first checkpoint.
   */
  commitSupersede(superseded: RunRecord): Promise<void> {
    if (superseded.status === 'done') return this.write('C0', { runId: superseded.identity.runId });
    const ended: RunRecord = {
      ...superseded,
      status: 'done',
      termination: { type: 'cancelled', reason: 'superseded by a new message' },
      openTickets: [],
      updatedAt: this.scope.clock.now(),
    };
    this.superseding = ended;
    return this.write('C0', { record: ended, own: false }).then(() => {
      this.superseding = undefined;
    });
  }

  /**
   * The run's last commit: whatever is not in the store yet and the run record with its final status. When the
   * superseding C0 failed, it is committed first: its answers never reach the store without the superseded run's
   * ending (that run would stay `waiting` behind this one, where no decision can reach it).
   */
  commitRunEnd(status: RunStatus, termination: TerminationReason): Promise<void> {
    const superseding = this.superseding;
    // The common end is one write: no async frame of its own around it.
    if (superseding === undefined) return this.write('run-end', this.ownRun(status, termination, 'always'));
    return this.write('C0', { record: superseding, own: false }).then(() => {
      this.superseding = undefined;
      return this.write('run-end', this.ownRun(status, termination, 'always'));
    });
  }

  /**
   * This run's part of a commit: its record — `always`, or `when-stale`: only when the store has none yet, or
   * its status or open tickets are out of date — else just its id.
   */
  private ownRun(
    status: RunStatus,
    termination: TerminationReason | undefined,
    write: 'always' | 'when-stale',
  ): RunPart {
    const stale =
      write === 'always' ||
      !this.runWritten ||
      status !== this.writtenStatus ||
      (this.stateChanged() && this.ticketsChanged());
    return stale
      ? { record: this.runRecord(status, termination), own: true }
      : { runId: this.scope.identity.runId };
  }

  /**
   * One atomic commit of everything not yet in the store: the messages added since the last commit, ledger
   * entries riding along, the thread state when it changed, and the run's part (a record, or the run's id).
   */
  private async write(kind: CheckpointKind, run: RunPart): Promise<void> {
    this.assertLeaseHeld();
    const { scope } = this;
    const { persistence, identity, leaseToken } = scope.options;
    const messages = scope.messages.slice(this.committedCount);
    const threadRevision = scope.state.threadRevision;
    const executions = this.riding;
    this.riding = undefined;
    const commit: CheckpointCommit = {
      threadId: identity.threadId,
      expectedMessageCount: this.committedCount,
      messages,
    };
    if ('record' in run) commit.run = run.record;
    else commit.runId = run.runId;
    if (threadRevision !== this.lastThreadRevision) commit.threadState = scope.state.exportScope('thread');
    if (executions !== undefined) commit.toolExecutions = executions;
    if (leaseToken !== undefined) commit.leaseToken = leaseToken;
    const observed = scope.instrumentation?.checkpointStarted(kind);
    try {
      this.committedCount = await persistence.commit(commit);
    } catch (error) {
      if (executions !== undefined) this.riding = this.riding ? executions.concat(this.riding) : executions;
      observed?.end({ ...checkpointOutcome(commit), error });
      throw error;
    }
    observed?.end(checkpointOutcome(commit));
    this.lastThreadRevision = threadRevision;
    if ('record' in run && run.own) {
      this.runWritten = true;
      this.writtenStatus = run.record.status;
      this.writtenTickets = ticketSignature(run.record.openTickets);
    }
  }

  /**
   * The run lost its thread's lease: the results of calls that finished here still go to the ledger (fenced by
   * the store: refused if another process holds the thread now, harmless otherwise), so a finished side effect is
   * never run again. Nothing else is written.
   */
  async saveFinished(): Promise<void> {
    const finished = this.riding?.filter((entry) => entry.status === 'completed') ?? [];
    this.riding = undefined;
    for (const entry of finished) {
      try {
        await this.complete(entry);
      } catch {
        // refused (another process holds the thread) or unreachable: as after a crash, the ledger decides
      }
    }
  }

  /**
   * Commits stop once the run lost its thread's lease: another process may be continuing it, and the store stays
   * as a crash at this instant would leave it (finished calls' results aside, see {@link saveFinished}).
   */
  private assertLeaseHeld(): void {
    if (this.scope.leaseLost) throw this.scope.signal.reason;
  }

  /** The tickets of the calls that wait for a decision now. */
  currentTickets() {
    const state = this.scope.state;
    return state.written(toolCallsKey) ? openTickets(state.peek(toolCallsKey)) : [];
  }
}

/** The run part of a commit: a run record (this run's, or a superseded run's), or only this run's id. */
type RunPart = { readonly record: RunRecord; readonly own: boolean } | { readonly runId: string };

const SUSPENDED: TerminationReason = Object.freeze({ type: 'suspended' });
const DONE: Promise<void> = Promise.resolve();

/** What a checkpoint commit carried, for the run's observer. */
function checkpointOutcome(commit: CheckpointCommit): CheckpointOutcome {
  return {
    messages: commit.messages.length,
    ledgerEntries: commit.toolExecutions?.length ?? 0,
    runRecord: commit.run !== undefined,
  };
}

function ticketSignature(tickets: ReadonlyArray<{ id: string }>): string {
  if (tickets.length === 0) return '';
  let signature = '';
  for (const ticket of tickets) signature += `${ticket.id},`;
  return signature;
}
