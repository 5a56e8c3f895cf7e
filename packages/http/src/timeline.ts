import type {
  LunationStore,
  MessageRecord,
  RunRecord,
  TerminationReason,
  ToolExecution,
  Usage,
} from '@lunation/contract';
import { type RunJournalEntry, runJournalOf } from '@lunation/runtime/internal';
import { type RunSummary, runSummary } from './run-summary.js';

/** Which runtime process ran a part of a run: its lease owner name and instance id. */
export interface TimelineWorker {
  owner: string;
  incarnation: string | null;
}

/** One entry of a run's timeline; see the package README for each kind. */
export type TimelineEntry =
  | { kind: 'run-created'; at: number }
  | {
      kind: 'step';
      at: number;
      step: number;
      leaseToken: number | null;
      worker: TimelineWorker;
      model: { latencyMs: number | null; usage: Usage | null };
    }
  | { kind: 'checkpoint'; at: number; messages: Array<{ seq: number; role: string }> }
  | {
      kind: 'tool';
      at: number;
      /** The step whose model call made the call (null when the journal no longer has it). */
      step: number | null;
      toolCallId: string;
      toolName: string;
      status: ToolExecution['status'];
      attempts: number;
      rerun: boolean;
      fromLedger: boolean;
      startedAt: number;
      completedAt: number | null;
      durationMs: number | null;
      isError: boolean;
    }
  | { kind: 'suspended'; at: number; step: number; tickets: string[]; worker: TimelineWorker }
  | {
      kind: 'resumed' | 'recovered';
      at: number;
      step: number;
      leaseToken: number | null;
      worker: TimelineWorker;
    }
  | {
      kind: 'lease-takeover';
      at: number;
      step: number;
      fromToken: number | null;
      toToken: number | null;
      from: TimelineWorker;
      to: TimelineWorker;
    }
  | { kind: 'run-ended'; at: number; status: RunRecord['status']; termination: TerminationReason | null };

/** A run's timeline: the run and its entries in time order. */
export interface RunTimeline {
  run: RunSummary;
  entries: TimelineEntry[];
  /** Every runtime process that ran a part of the run, in order of appearance. */
  workers: TimelineWorker[];
}

/**
 * Builds a run's timeline from the store alone (so it survives crashes and restarts): the run's journal (from its
 * record and its messages: steps, model latency and usage, lease tokens and runners, suspensions, resumes,
 * recoveries), the run's messages (checkpoints) and the execution ledger (tool attempts, re-runs, results taken from the ledger).
 */
export async function buildTimeline(store: LunationStore, run: RunRecord): Promise<RunTimeline> {
  const { runId, threadId } = run.identity;
  const [messages, executions] = await Promise.all([
    store.listMessages(threadId),
    store.listToolExecutions(runId),
  ]);
  const own = messages.filter((record) => record.runId === runId);
  const journal = runJournalOf(run, own);
  const entries: TimelineEntry[] = [
    { kind: 'run-created', at: run.createdAt },
    ...interleave(journalEntries(journal), [...checkpoints(own), ...tools(executions, own, journal)]),
  ];
  if (run.status === 'done') {
    // The end is the run's last commit: after every entry of it (clocks of the runtime and the store may differ).
    const at = Math.max(run.updatedAt, entries.at(-1)?.at ?? 0);
    entries.push({ kind: 'run-ended', at, status: run.status, termination: run.termination ?? null });
  }
  const workers = new Map<string, TimelineWorker>();
  for (const entry of journal) workers.set(`${entry.owner}/${entry.incarnation}`, workerOf(entry));
  return { run: runSummary(run), entries, workers: [...workers.values()] };
}

/**
 * The journal's entries keep their order: it is the order they happened in, whatever the clocks of the
 * processes that wrote them. Each checkpoint and tool execution goes before the first journal entry it precedes.
 */
function interleave(journal: TimelineEntry[], others: TimelineEntry[]): TimelineEntry[] {
  const before: TimelineEntry[][] = journal.map(() => []);
  const after: TimelineEntry[] = [];
  for (const other of others) {
    const index = journal.findIndex((entry) => precedes(other, entry));
    (index === -1 ? after : before[index]!).push(other);
  }
  return journal.flatMap((entry, index) => [...byTime(before[index]!), entry]).concat(byTime(after));
}

/**
 * Whether `other` (a checkpoint or a tool execution) goes before the journal entry. A tool call of a known step
 * comes after that step and before every later one (clocks may differ between processes); within its step, and
 * for the rest, time decides. Within one millisecond a checkpoint (the messages of one commit) comes before the
 * suspension that commit wrote.
 */
function precedes(other: TimelineEntry, entry: TimelineEntry): boolean {
  const step = ('step' in entry ? entry.step : null) ?? 0;
  if (other.kind === 'tool' && other.step !== null && other.step !== step) return other.step < step;
  if (other.kind === 'tool' && entry.kind === 'step') return false;
  return (
    other.at < entry.at ||
    (other.at === entry.at && other.kind === 'checkpoint' && entry.kind === 'suspended')
  );
}

/** Checkpoints and tool executions by time; within one millisecond a step's tool calls before the next step's. */
function byTime(entries: TimelineEntry[]): TimelineEntry[] {
  const stepOf = (entry: TimelineEntry) => (entry.kind === 'tool' && entry.step !== null ? entry.step : 0);
  return entries.sort((a, b) => a.at - b.at || stepOf(a) - stepOf(b));
}

function workerOf(entry: RunJournalEntry): TimelineWorker {
  return { owner: entry.owner, incarnation: entry.incarnation ?? null };
}

function journalEntries(journal: RunJournalEntry[]): TimelineEntry[] {
  const entries: TimelineEntry[] = [];
  let previous: RunJournalEntry | undefined;
  for (const entry of journal) {
    const token = entry.token ?? null;
    if (
      previous &&
      previous.event !== 'suspended' &&
      previous.event !== 'ended' &&
      (previous.token !== entry.token || previous.incarnation !== entry.incarnation)
    ) {
      entries.push({
        kind: 'lease-takeover',
        at: entry.at,
        step: entry.step,
        fromToken: previous.token ?? null,
        toToken: token,
        from: workerOf(previous),
        to: workerOf(entry),
      });
    }
    switch (entry.event) {
      case 'step':
        entries.push({
          kind: 'step',
          at: entry.at,
          step: entry.step,
          leaseToken: token,
          worker: workerOf(entry),
          model: { latencyMs: entry.modelMs ?? null, usage: entry.usage ?? null },
        });
        break;
      case 'suspended':
        entries.push({
          kind: 'suspended',
          at: entry.at,
          step: entry.step,
          tickets: entry.tickets ?? [],
          worker: workerOf(entry),
        });
        break;
      case 'resumed':
      case 'recovered':
        entries.push({
          kind: entry.event,
          at: entry.at,
          step: entry.step,
          leaseToken: token,
          worker: workerOf(entry),
        });
        break;
      default:
        break;
    }
    previous = entry;
  }
  return entries;
}

/** Messages committed together (one `createdAt`) are one checkpoint. */
function checkpoints(messages: MessageRecord[]): TimelineEntry[] {
  const byTime = new Map<number, Array<{ seq: number; role: string }>>();
  for (const record of messages) {
    const group = byTime.get(record.createdAt) ?? [];
    group.push({ seq: record.seq, role: record.message.role });
    byTime.set(record.createdAt, group);
  }
  return [...byTime].map(([at, group]) => ({ kind: 'checkpoint', at, messages: group }));
}

/**
 * The ledger's tool executions. `rerun`: more than one attempt (an earlier one died mid-way). `fromLedger`: the
 * result was recorded before a process took the run over, and the step that used it was committed after:
 * the new process read the result from the ledger instead of running the tool again.
 */
function tools(
  executions: ToolExecution[],
  messages: MessageRecord[],
  journal: RunJournalEntry[],
): TimelineEntry[] {
  const resultAt = new Map<string, number>();
  const callIds = new Map<string, string>();
  for (const { message, createdAt } of messages) {
    for (const part of message.content) {
      if (part.type === 'tool-call') callIds.set(part.callId ?? part.toolCallId, part.toolCallId);
      if (part.type === 'tool-result') resultAt.set(part.toolCallId, createdAt);
    }
  }
  const recoveries = journal.filter((entry) => entry.event === 'recovered').map((entry) => entry.at);
  const stepOf = new Map<string, number>();
  for (const entry of journal) for (const call of entry.calls ?? []) stepOf.set(call, entry.step);
  return executions.map((execution) => {
    const completedAt = execution.completedAt ?? null;
    const committedAt = resultAt.get(callIds.get(execution.toolCallId) ?? execution.toolCallId);
    const fromLedger =
      completedAt !== null &&
      committedAt !== undefined &&
      recoveries.some((at) => at >= completedAt && at <= committedAt);
    return {
      kind: 'tool',
      at: execution.startedAt,
      step: stepOf.get(execution.toolCallId) ?? null,
      toolCallId: execution.toolCallId,
      toolName: execution.toolName,
      status: execution.status,
      attempts: execution.attempts,
      rerun: execution.attempts > 1,
      fromLedger,
      startedAt: execution.startedAt,
      completedAt,
      durationMs: completedAt === null ? null : completedAt - execution.startedAt,
      isError: execution.result?.status === 'error',
    };
  });
}
