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

/** The journal entries of a run record (empty when it has none). */
export function runJournalOf(run: Pick<RunRecord, 'state'>): RunJournalEntry[] {
  const entries = run.state[RUN_JOURNAL_KEY];
  return Array.isArray(entries) ? (entries as unknown as RunJournalEntry[]) : [];
}

/** A run record's state without its journal (which is not state the run's plugins read). */
export function withoutJournal(state: JsonObject): JsonObject {
  if (!(RUN_JOURNAL_KEY in state)) return state;
  const { [RUN_JOURNAL_KEY]: _journal, ...rest } = state;
  return rest;
}

/**
 * A run's journal as one process continues it: a compact record per step, kept in the run record's persisted
 * state and so written inside the step's own checkpoint commit (no extra write). Bounded to
 * {@link RUN_JOURNAL_LIMIT} entries.
 */
export class RunJournal {
  private readonly entries: RunJournalEntry[];
  private started = false;
  private ended = false;
  private stepEntry: RunJournalEntry | undefined;
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
    this.entries = previous ? runJournalOf(previous).slice() : [];
  }

  /** Notes the current step's model call (latency, usage, the calls it made), for the step's entry. */
  inferred(step: number, ms: number, usage: Usage, calls: string[]): void {
    this.model = { step, at: this.clock.now() - ms, ms, usage, calls };
    if (this.stepEntry?.step === step) this.fillModel(this.stepEntry);
  }

  /** Writes the journal into `record.state` (a run record being built for a commit). */
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
    record.state = { ...record.state, [RUN_JOURNAL_KEY]: this.entries.slice() as unknown as JsonObject[] };
  }

  private add(event: RunJournalEntry['event'], step: number): RunJournalEntry {
    const entry: RunJournalEntry = {
      event,
      at: this.clock.now(),
      step,
      owner: this.runner?.owner ?? 'unknown',
    };
    if (this.token !== undefined) entry.token = this.token;
    if (this.runner?.incarnation !== undefined) entry.incarnation = this.runner.incarnation;
    this.entries.push(entry);
    if (this.entries.length > RUN_JOURNAL_LIMIT)
      this.entries.splice(0, this.entries.length - RUN_JOURNAL_LIMIT);
    return entry;
  }

  private fillModel(entry: RunJournalEntry): void {
    if (this.model?.step !== entry.step) return;
    entry.at = this.model.at;
    entry.modelMs = this.model.ms;
    entry.usage = this.model.usage;
    if (this.model.calls.length > 0) entry.calls = this.model.calls;
  }
}
