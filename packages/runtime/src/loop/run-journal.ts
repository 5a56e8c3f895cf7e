import type { Clock, JsonObject, RunRecord, Usage } from '@lunation/contract';

/** The key of the run journal in a run record's persisted `state`. */
export const RUN_JOURNAL_KEY = 'runtime.journal';

/** The most entries a run journal keeps (the oldest go first). */
export const RUN_JOURNAL_LIMIT = 200;

/** Which runtime process wrote a journal entry: its lease owner name and its instance id. */
export interface RunJournalRunner {
  owner: string;
  /** A random id per runtime instance (per process start); absent without a store. */
  incarnation?: string | undefined;
}

/**
 * One entry of a run's journal:
 * - `step` — a step this process ran: its model call's latency and usage;
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
 * The journal entries of a run record (empty when it has none), each whole: the record keeps them compact (the
 * runner only on its first entry, no zero usage) and this restores what an entry left out.
 */
export function runJournalOf(run: Pick<RunRecord, 'state'>): RunJournalEntry[] {
  const stored = run.state[RUN_JOURNAL_KEY];
  if (!Array.isArray(stored)) return [];
  const entries: RunJournalEntry[] = [];
  let runner: StoredEntry | undefined;
  for (const value of stored as unknown as StoredEntry[]) {
    if (value.owner !== undefined) runner = value;
    entries.push(restored(value, runner));
  }
  return entries;
}

/** An entry as the record keeps it: the runner only when it differs from the entry before, usage without zeros. */
type StoredEntry = Omit<RunJournalEntry, 'owner' | 'usage'> & { owner?: string; usage?: Partial<Usage> };

function restored(value: StoredEntry, runner: StoredEntry | undefined): RunJournalEntry {
  const entry = { ...value, owner: runner?.owner ?? 'unknown' } as RunJournalEntry;
  if (value.owner === undefined) {
    if (runner?.token !== undefined) entry.token = runner.token;
    if (runner?.incarnation !== undefined) entry.incarnation = runner.incarnation;
  }
  if (value.usage !== undefined) entry.usage = { ...ZERO_USAGE, ...value.usage };
  return entry;
}

const ZERO_USAGE: Usage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
});

/** The usage counts that are not zero (what an entry keeps). */
function compactUsage(usage: Usage): Partial<Usage> {
  const kept: Partial<Usage> = {};
  for (const key of USAGE_KEYS) if (usage[key] !== 0) kept[key] = usage[key];
  return kept;
}

const USAGE_KEYS = Object.keys(ZERO_USAGE) as (keyof Usage)[];

/** A run record's state without its journal (which is not state the run's plugins read). */
export function withoutJournal(state: JsonObject): JsonObject {
  if (!(RUN_JOURNAL_KEY in state)) return state;
  const { [RUN_JOURNAL_KEY]: _journal, ...rest } = state;
  return rest;
}

/**
 * A run's journal as one process continues it: a compact record per step, kept in the run record's persisted
 * state and so written inside the step's own checkpoint commit (no extra write). Bounded to
 * {@link RUN_JOURNAL_LIMIT} entries. Each record carries the whole journal, so an entry is kept small: the runner
 * (owner, incarnation, token) only on the first entry of each runner, a usage without its zero counts
 * ({@link runJournalOf} restores both).
 */
export class RunJournal {
  private readonly entries: StoredEntry[];
  private started = false;
  private ended = false;
  /** Whether this process's runner is still to be written (on its first entry). */
  private runnerDue = true;
  private stepEntry: StoredEntry | undefined;
  /** When this process took the run on. */
  private readonly startedAt: number;
  private model: { step: number; at: number; ms: number; usage: Usage; calls: string[] } | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly previous: RunRecord | undefined,
    private readonly runner: RunJournalRunner | undefined,
    private readonly token: number | undefined,
  ) {
    this.startedAt = clock.now();
    const stored = previous?.state[RUN_JOURNAL_KEY];
    this.entries = Array.isArray(stored) ? (stored as unknown as StoredEntry[]).slice() : [];
  }

  /** Notes the current step's model call (latency, usage, the calls it made), for the step's entry. */
  inferred(step: number, ms: number, usage: Usage, calls: string[]): void {
    this.model = { step, at: this.clock.now() - ms, ms, usage, calls };
    if (this.stepEntry?.step === step) this.fillModel(this.stepEntry);
  }

  /** Writes the journal into `record.state` (a run record being built for a commit, with a `state` of its own). */
  stamp(record: RunRecord): void {
    const { steps: step, status, termination } = record;
    if (!this.started) {
      this.started = true;
      if (this.previous) {
        this.add(this.previous.status === 'waiting' ? 'resumed' : 'recovered', step).at = this.startedAt;
      }
    }
    if (this.model?.step === step && this.stepEntry?.step !== step) {
      this.stepEntry = this.add('step', step);
      this.fillModel(this.stepEntry);
    }
    if (status !== 'running' && !this.ended && termination !== undefined) {
      this.ended = true;
      const entry = this.add(termination.type === 'suspended' ? 'suspended' : 'ended', step);
      if (termination.type === 'suspended') entry.tickets = record.openTickets.map((ticket) => ticket.id);
      else entry.termination = termination.type;
    }
    // The record is being built for a commit: its `state` is its own object (no copy of it needed).
    record.state[RUN_JOURNAL_KEY] = this.entries.slice() as unknown as JsonObject[];
  }

  private add(event: RunJournalEntry['event'], step: number): StoredEntry {
    const entry: StoredEntry = { event, at: this.clock.now(), step };
    if (this.runnerDue) {
      this.runnerDue = false;
      entry.owner = this.runner?.owner ?? 'unknown';
      if (this.token !== undefined) entry.token = this.token;
      if (this.runner?.incarnation !== undefined) entry.incarnation = this.runner.incarnation;
    }
    this.entries.push(entry);
    if (this.entries.length > RUN_JOURNAL_LIMIT) this.dropOldest(this.entries.length - RUN_JOURNAL_LIMIT);
    return entry;
  }

  /** Drops the oldest entries; the new first entry gets its runner written out (the one before it is gone). */
  private dropOldest(count: number): void {
    const kept = { [RUN_JOURNAL_KEY]: this.entries.slice(0, count + 1) as unknown as JsonObject[] };
    const first = runJournalOf({ state: kept })[count];
    this.entries.splice(0, count);
    const head = this.entries[0];
    if (head === undefined || first === undefined || head.owner !== undefined) return;
    const whole: StoredEntry = { ...head, owner: first.owner };
    if (first.token !== undefined) whole.token = first.token;
    if (first.incarnation !== undefined) whole.incarnation = first.incarnation;
    this.entries[0] = whole;
    if (this.stepEntry === head) this.stepEntry = whole;
  }

  private fillModel(entry: StoredEntry): void {
    if (this.model?.step !== entry.step) return;
    entry.at = this.model.at;
    entry.modelMs = this.model.ms;
    entry.usage = compactUsage(this.model.usage);
    if (this.model.calls.length > 0) entry.calls = this.model.calls;
  }
}
