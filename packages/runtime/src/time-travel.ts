import {
  type Clock,
  emptyUsage,
  type IdSource,
  type JsonObject,
  LunationError,
  type LunationStore,
  type Message,
  type MessageRecord,
  type RunRecord,
  systemClock,
  systemIds,
  type ThreadRecord,
  type ToolMessage,
  type ToolResult,
  type ToolResultPart,
  toolCallIdentity,
  type Usage,
} from '@lunation/contract';
import { tasksKey } from './background-tasks.js';
import { toolCallsKey, unansweredCalls } from './loop/call-records.js';
import { withoutJournal } from './loop/run-journal.js';
import { runJournalOf } from './loop/run-journal-reader.js';
import { appliedDecisionsKey } from './runtime-keys.js';

/** A tool call of a checkpoint's step. */
export interface CheckpointCall {
  toolCallId: string;
  toolName: string;
  /** Whether the checkpoint's messages hold its result. */
  answered: boolean;
}

/**
 * One checkpoint of a thread: the thread as it was after one of its steps (a model call and the tool calls it
 * made), across all its runs. Built from the stored messages (each step's messages carry their run and step) and
 * the run journal (the step's model latency and usage, while the journal keeps them).
 */
export interface ThreadStepCheckpoint {
  /** The step's position in the thread, from 1 (runs in order, steps in order): what a fork names. */
  checkpoint: number;
  /** The run the step belongs to. */
  runId: string;
  /** The step's number within its run, from 1. */
  step: number;
  /** How many of the thread's messages the checkpoint holds (the seq of the step's last message). */
  messageCount: number;
  /**
   * Whether every tool call of the step has its result in those messages; false for a step that waits for
   * decisions or still runs (a fork from it settles its open calls, see {@link ForkThreadOptions.openCalls}).
   */
  complete: boolean;
  /** When the step's last message was committed (epoch ms; in a fork, when it was copied). */
  at: number;
  /** The text the model answered in the step. */
  text: string;
  /** The tool calls the model made in the step. */
  calls: CheckpointCall[];
  /**
   * The text of the user message just before the step: the run's input on its first step (or a message sent to
   * the run before this step).
   */
  input?: string;
  /** How long the step's model call took, in milliseconds (from the run journal, while it keeps the step). */
  modelMs?: number;
  /** The step's own token usage (from the run journal, while it keeps the step). */
  usage?: Usage;
}

/** Where a fork came from: kept in the fork's metadata as `forkedFrom`. */
export interface ForkOrigin {
  threadId: string;
  checkpoint: number;
  /** How many of the original's messages the fork copied. */
  messageCount: number;
}

/** Options of {@link forkThread}. */
export interface ForkThreadOptions {
  /** The checkpoint to fork from ({@link ThreadStepCheckpoint.checkpoint}); 0 forks before the first message. */
  checkpoint: number;
  /** The fork's id. @default a random UUID */
  threadId?: string;
  /** The fork's owner. @default the original's */
  resourceId?: string;
  /** Merged over the original's metadata; `forkedFrom` ({@link ForkOrigin}) is always set. */
  metadata?: Record<string, unknown>;
  /**
   * The fork's thread state (to edit it). The store keeps a thread's latest state only, not one per step.
   * @default the original's current thread state, without the runtime's records of the original's calls,
   * decisions and background tasks
   */
  threadState?: Record<string, unknown>;
  /**
   * The calls of the checkpoint's step that have no result in the copied messages (the step waits for a decision,
   * or still ran): `settle` (the default) answers each in the fork at once, with the result the original's ledger
   * recorded when the call completed there, else with an error result saying it did not run; nothing runs again.
   * `rerun` leaves them open, so the fork's next run runs them again, through the gates (an approval is asked
   * again), as calls of the fork: a call the original completed then takes effect twice. Needs `continueRun`.
   * @default 'settle'
   */
  openCalls?: 'settle' | 'rerun';
  /**
   * Writes the fork's first run as `running`: a run of its own (a new id) continuing the checkpoint's run from
   * its step, with that run's agent and run-scoped state, so the fork's next `run({ threadId })` continues it
   * without new input (its next step calls the model on the copied history). A process that starts on the store
   * continues it too (`resumeCutOffRuns`, a fleet's stranded-run scan). @default false
   */
  continueRun?: boolean;
}

/** How a fork settled an open call of its checkpoint's step. */
export interface SettledCall {
  toolCallId: string;
  toolName: string;
  /** `recorded`: the original's ledger had its result; `not-run`: it gets an error result and never runs. */
  outcome: 'recorded' | 'not-run';
}

/** What {@link forkThread} made. */
export interface ForkResult {
  /** The new thread. */
  thread: ThreadRecord;
  /** The checkpoint forked from (undefined for checkpoint 0). */
  checkpoint: ThreadStepCheckpoint | undefined;
  /** The fork's message count: the copied messages, and a tool message settling open calls if any. */
  messageCount: number;
  /** The open calls the fork answered (`openCalls: 'settle'`). */
  settled: SettledCall[];
  /** The open calls left for the fork's next run to run again (`openCalls: 'rerun'`). */
  rerun: CheckpointCall[];
  /** The run `continueRun` wrote, for the fork's next run to continue. */
  runId?: string;
}

/** Thread-state keys that record the original's own calls, decisions and tasks: a fork starts without them. */
const ORIGINAL_ONLY_KEYS = [toolCallsKey.name, appliedDecisionsKey.name, tasksKey.name];

/**
 * A thread's checkpoints, one per step, oldest first (see {@link ThreadStepCheckpoint}); `[]` for a thread
 * without steps or one that does not exist.
 */
export async function listCheckpoints(
  store: LunationStore,
  threadId: string,
): Promise<ThreadStepCheckpoint[]> {
  const records = await store.listMessages(threadId);
  const checkpoints = checkpointsOf(records);
  const runIds = [...new Set(checkpoints.map((checkpoint) => checkpoint.runId))];
  const runs = await Promise.all(runIds.map((runId) => store.getRun(runId)));
  // A run whose record is gone (a fork's copies of the original's): the steps its messages carry.
  const journals = new Map(
    runIds.map((runId, index) => [
      runId,
      runJournalOf(runs[index] ?? { identity: { runId }, state: {} }, records),
    ]),
  );
  for (const checkpoint of checkpoints) {
    const entry = journals
      .get(checkpoint.runId)
      ?.find((candidate) => candidate.event === 'step' && candidate.step === checkpoint.step);
    if (entry?.modelMs !== undefined) checkpoint.modelMs = entry.modelMs;
    if (entry?.usage !== undefined) checkpoint.usage = entry.usage;
  }
  return checkpoints;
}

/**
 * Forks a new thread from a checkpoint of another: the original's messages up to it (each with its run, so the
 * fork's first steps are the original's), its thread state (see {@link ForkThreadOptions.threadState}) and
 * `forkedFrom` in its metadata. The original is not changed. The fork has no runs (unless `continueRun`): its next
 * run, with new input, continues from the checkpoint, the model called on the copied history and the input.
 *
 * @remarks Side effects. A fork never replays a recorded side effect of the original unless asked: the copied
 * tool results are history, never run again; the calls of the checkpoint's step that have no result are settled
 * (the original's recorded result, or an error result saying they did not run) unless `openCalls: 'rerun'` asks
 * for them to run again. The original's ledger entries stay the original's. Calls the fork's later runs make are
 * the fork's own (its runs, its ledger entries and idempotency keys): a model that makes again a call the
 * original made after the checkpoint makes a new call, which runs like any other, through the agent's gates.
 * A fork is written in one commit per run of the copied messages; one that fails part-way is deleted.
 * @throws LunationError `not-found` for a missing thread, `invalid-argument` for a checkpoint it does not have,
 * `store-conflict` when `threadId` is taken.
 */
export async function forkThread(
  store: LunationStore,
  threadId: string,
  options: ForkThreadOptions,
  { clock, ids }: { clock: Clock; ids: IdSource } = { clock: systemClock, ids: systemIds },
): Promise<ForkResult> {
  const original = await store.getThread(threadId);
  if (!original) throw new LunationError('not-found', `Thread "${threadId}" does not exist`);
  const records = await store.listMessages(threadId);
  const checkpoints = checkpointsOf(records);
  const { checkpoint: position } = options;
  if (!Number.isSafeInteger(position) || position < 0 || position > checkpoints.length) {
    throw new LunationError(
      'invalid-argument',
      `Thread "${threadId}" has no checkpoint ${position}: it has checkpoints 0 to ${checkpoints.length}`,
    );
  }
  const checkpoint = position === 0 ? undefined : checkpoints[position - 1];
  const copied = records.slice(0, checkpoint?.messageCount ?? 0);
  const open = checkpoint
    ? unansweredCalls(copied.map((record) => record.message)).map((call) => ({ ...call, step: checkpoint }))
    : [];
  const settle = (options.openCalls ?? 'settle') === 'settle';
  if (!settle && open.length > 0 && !options.continueRun) {
    throw new LunationError(
      'invalid-argument',
      `Checkpoint ${position} of thread "${threadId}" has ${open.length} open call(s): running them again in the fork (openCalls: 'rerun') continues its run; set continueRun`,
    );
  }
  const continued = options.continueRun && checkpoint ? await store.getRun(checkpoint.runId) : undefined;
  if (options.continueRun && !continued) {
    throw new LunationError(
      'invalid-argument',
      `Checkpoint ${position} of thread "${threadId}" has no stored run to continue (checkpoint 0, or its run record is gone): fork it and send input instead`,
    );
  }
  const settled: SettledCall[] = [];
  const answers: ToolResultPart[] = [];
  if (settle) {
    for (const call of open) {
      const execution = await store.getToolExecution(call.step.runId, toolCallIdentity(call));
      const recorded = execution?.status === 'completed' ? execution.result : undefined;
      answers.push({
        type: 'tool-result',
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        result: recorded ?? notRunResult(threadId, position),
      });
      settled.push({
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        outcome: recorded ? 'recorded' : 'not-run',
      });
    }
  }
  const origin: ForkOrigin = { threadId, checkpoint: position, messageCount: copied.length };
  const owner = options.resourceId ?? original.resourceId;
  const thread = await store.createThread({
    id: options.threadId ?? ids.id(),
    ...(owner !== undefined ? { resourceId: owner } : {}),
    metadata: { ...original.metadata, ...options.metadata, forkedFrom: { ...origin } },
  });
  try {
    const threadState = options.threadState ?? withoutOriginalRecords(await store.getThreadState(threadId));
    let messageCount = 0;
    const groups = byRun(copied);
    if (answers.length > 0 && checkpoint) {
      const settling: ToolMessage = {
        id: ids.id(),
        role: 'tool',
        content: answers,
        metadata: { runId: checkpoint.runId, step: checkpoint.step, forkedFrom: { ...origin } },
      };
      groups.push({ runId: checkpoint.runId, messages: [settling] });
    }
    if (groups.length === 0) groups.push({ runId: undefined, messages: [] });
    const now = clock.now();
    const run: RunRecord | undefined =
      continued && checkpoint
        ? {
            identity: {
              threadId: thread.id,
              runId: `${ids.id()}-fork`,
              agentId: continued.identity.agentId,
              origin: continued.identity.origin,
            },
            status: 'running',
            steps: checkpoint.step,
            usage: emptyUsage(),
            openTickets: [],
            state: withoutJournal(continued.state),
            ...(continued.registryVersion !== undefined
              ? { registryVersion: continued.registryVersion }
              : {}),
            createdAt: now,
            updatedAt: now,
          }
        : undefined;
    // One commit per run, so each message keeps its run (what groups a run's messages into one answer); the last
    // one carries the thread state.
    for (const [index, group] of groups.entries()) {
      const result = await store.commit({
        threadId: thread.id,
        expectedMessageCount: messageCount,
        messages: group.messages,
        ...(group.runId ? { runId: group.runId } : {}),
        ...(index === groups.length - 1
          ? {
              threadState: threadState as JsonObject,
              ...(run ? { run, runId: group.runId ?? run.identity.runId } : {}),
            }
          : {}),
      });
      messageCount = result.messageCount;
    }
    return {
      thread: (await store.getThread(thread.id)) ?? thread,
      checkpoint,
      messageCount,
      settled,
      rerun: settle
        ? []
        : open.map(({ toolCallId, toolName }) => ({ toolCallId, toolName, answered: false })),
      ...(run ? { runId: run.identity.runId } : {}),
    };
  } catch (error) {
    // A fork that failed part-way is removed, not left half-copied.
    await store.deleteThread(thread.id).catch(() => false);
    throw error;
  }
}

/** The checkpoints of a thread's messages (without journal data). */
function checkpointsOf(records: MessageRecord[]): ThreadStepCheckpoint[] {
  const checkpoints: ThreadStepCheckpoint[] = [];
  let current: ThreadStepCheckpoint | undefined;
  let input: string | undefined;
  for (const record of records) {
    const { message } = record;
    if (message.role === 'user') {
      input = message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
      continue;
    }
    const step = message.metadata?.step;
    const runId = typeof message.metadata?.runId === 'string' ? message.metadata.runId : record.runId;
    if (typeof step !== 'number' || runId === undefined) continue;
    if (current?.runId !== runId || current.step !== step) {
      current = {
        checkpoint: checkpoints.length + 1,
        runId,
        step,
        messageCount: record.seq,
        complete: true,
        at: record.createdAt,
        text: '',
        calls: [],
        ...(input !== undefined ? { input } : {}),
      };
      input = undefined;
      checkpoints.push(current);
    }
    current.messageCount = record.seq;
    current.at = record.createdAt;
    if (message.role === 'assistant') {
      for (const part of message.content) {
        if (part.type === 'text') current.text += part.text;
        else if (part.type === 'tool-call')
          current.calls.push({ toolCallId: part.toolCallId, toolName: part.toolName, answered: false });
      }
    } else if (message.role === 'tool') {
      // The step's own results: its tool messages carry its run and step.
      for (const result of message.content) {
        const call = current.calls.find((candidate) => candidate.toolCallId === result.toolCallId);
        if (call) call.answered = true;
      }
    }
    current.complete = current.calls.every((call) => call.answered);
  }
  return checkpoints;
}

/** Consecutive messages of one run, for one commit each. */
function byRun(records: MessageRecord[]): Array<{ runId: string | undefined; messages: Message[] }> {
  const groups: Array<{ runId: string | undefined; messages: Message[] }> = [];
  for (const record of records) {
    const last = groups.at(-1);
    if (last && last.runId === record.runId) last.messages.push(record.message);
    else groups.push({ runId: record.runId, messages: [record.message] });
  }
  return groups;
}

function withoutOriginalRecords(state: Record<string, unknown>): Record<string, unknown> {
  const copy = { ...state };
  for (const key of ORIGINAL_ONLY_KEYS) delete copy[key];
  return copy;
}

function notRunResult(threadId: string, checkpoint: number): ToolResult {
  return {
    status: 'error',
    message: `This call did not run in this thread: it was forked from thread "${threadId}" at checkpoint ${checkpoint}, before the call had a result there.`,
    metadata: { cancelled: true, forked: true },
  };
}
