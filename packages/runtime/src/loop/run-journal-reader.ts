import {
  type Message,
  type MessageRecord,
  type RunRecord,
  toolCallIdentity,
  type Usage,
} from '@lunation/contract';

/** The key of the run journal in a run record's persisted `state`. */
export const RUN_JOURNAL_KEY = 'runtime.journal';

/** The most entries a run journal keeps and reads (the oldest go first). */
export const RUN_JOURNAL_LIMIT = 200;

/**
 * One entry of a run's journal:
 * - `step` — a step's model call: its latency and usage;
 * - `resumed` — a waiting run continued after its decisions; `recovered` — a run left `running` (its process
 *   died, or its lease was lost) continued here;
 * - `suspended` — the run waits for decisions on `tickets`; `ended` — the run is done.
 *
 * Each carries the step, the lease token it was written under and the runner: a takeover shows as the token
 * and runner changing between entries.
 */
export interface RunJournalEntry {
  event: 'step' | 'resumed' | 'recovered' | 'suspended' | 'ended';
  /** When it happened (epoch ms): a step's model call started, or the entry was first written. */
  at: number;
  step: number;
  /** The fencing token of the lease the entry was written under (none without a store). */
  token?: number;
  owner: string;
  incarnation?: string;
  /** `step`: how long the model call took, in milliseconds. */
  modelMs?: number;
  /** `step`: the step's own token usage. */
  usage?: Usage;
  /** `step`: the ledger ids (`toolCallIdentity`) of the tool calls the model made in it. */
  calls?: string[];
  /** `suspended`: the ids of the open tickets. */
  tickets?: string[];
  /** `ended`: the termination type. */
  termination?: string;
}

/**
 * An item of the journal a run record keeps: a runner (`owner`, with its token and incarnation; `from`: the
 * thread's message count when it took the run on), an entry (`event`; `after`: the thread's message count when
 * it was written), or both. An entry without a runner of its own has the last one before it. Records written
 * before step entries moved into messages hold step entries too, without positions.
 */
export type JournalItem = Partial<Omit<RunJournalEntry, 'usage'>> & {
  usage?: Partial<Usage>;
  from?: number;
  after?: number;
};

/**
 * A run's journal entries, oldest first, each whole (the last 200): the run record's
 * (runners, resumes, recoveries, suspensions, the end) with the steps its assistant messages carry, from
 * `messages` (the thread's, as `listMessages` returns them; messages of other runs are passed over). Reads
 * records written before the steps moved into the messages as they were.
 */
export function runJournalOf(
  run: Pick<RunRecord, 'state'> & { identity: Pick<RunRecord['identity'], 'runId'> },
  messages: readonly MessageRecord[],
): RunJournalEntry[] {
  const stored = run.state[RUN_JOURNAL_KEY];
  const items = Array.isArray(stored) ? (stored as unknown as JournalItem[]) : [];
  const steps = stepsOf(run.identity.runId, messages);
  const entries: RunJournalEntry[] = [];
  let runner: JournalItem | undefined;
  let next = 0;
  // Steps of messages up to `position`: the runner's then, or gone with the items that named theirs.
  const stepsUpTo = (position: number) => {
    for (; next < steps.length && steps[next]!.seq <= position; next++) {
      if (runner) entries.push(restored(steps[next]!.entry, runner));
    }
  };
  for (const item of items) {
    if (item.from !== undefined) stepsUpTo(item.from);
    if (item.owner !== undefined) runner = item;
    if (item.after !== undefined) stepsUpTo(item.after);
    if (item.event !== undefined) entries.push(restored(item, runner));
  }
  for (; next < steps.length; next++) entries.push(restored(steps[next]!.entry, runner));
  return entries.length > RUN_JOURNAL_LIMIT ? entries.slice(-RUN_JOURNAL_LIMIT) : entries;
}

/** The step entries the run's assistant messages carry, with their positions in the thread. */
function stepsOf(runId: string, messages: readonly MessageRecord[]) {
  const steps: Array<{ seq: number; entry: JournalItem }> = [];
  for (const { seq, message } of messages) {
    const metadata = message.metadata;
    if (message.role !== 'assistant' || metadata?.runId !== runId) continue;
    const { inferredAt: at, step, modelMs, usage } = metadata;
    if (typeof at !== 'number' || typeof step !== 'number') continue;
    const entry = { event: 'step', at, step, modelMs, usage } as JournalItem;
    const calls = callsOf(message);
    if (calls) entry.calls = calls;
    steps.push({ seq, entry });
  }
  return steps;
}

/** An entry whole: its runner's owner, token and incarnation unless it has its own, usage with every count. */
function restored(item: JournalItem, runner: JournalItem | undefined): RunJournalEntry {
  const { from: _from, after: _after, ...value } = item;
  const entry = { ...value, owner: runner?.owner ?? 'unknown' } as RunJournalEntry;
  if (item.owner === undefined) {
    if (runner?.token !== undefined) entry.token = runner.token;
    if (runner?.incarnation !== undefined) entry.incarnation = runner.incarnation;
  }
  if (item.usage !== undefined) entry.usage = { ...ZERO_USAGE, ...item.usage };
  return entry;
}

const ZERO_USAGE: Usage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
});

/** The ledger ids of a message's tool calls (none: undefined). */
export function callsOf(message: Message): string[] | undefined {
  let calls: string[] | undefined;
  for (const part of message.content) {
    if (part.type !== 'tool-call') continue;
    calls ??= [];
    calls.push(toolCallIdentity(part));
  }
  return calls;
}
