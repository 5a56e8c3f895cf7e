import type {
  AssistantMessage,
  Clock,
  JsonObject,
  Message,
  RunRecord,
  TerminationReason,
  Usage,
} from '@lunation/contract';
import { callsOf, type JournalItem, RUN_JOURNAL_KEY, RUN_JOURNAL_LIMIT } from './run-journal-reader.js';

/** Which runtime process wrote a journal entry: its lease owner name and its instance id. */
export interface RunJournalRunner {
  owner: string;
  /** A random id per runtime instance (per process start); absent without a store. */
  incarnation?: string | undefined;
}

/** A run record's state without its journal (which is not state the run's plugins read). */
export function withoutJournal(state: JsonObject): JsonObject {
  if (!(RUN_JOURNAL_KEY in state)) return state;
  const { [RUN_JOURNAL_KEY]: _journal, ...rest } = state;
  return rest;
}

/**
 * A run's journal as one process continues it. A step's facts (when its model call started, how long it took,
 * its usage without zero counts) go into the step's assistant message metadata (`inferredAt`, `modelMs`,
 * `usage`), written once with the message. The run record keeps the rest, written with each record the
 * checkpointer builds: this process's runner (owner, incarnation, lease token) once, from the thread position it
 * took the run over at, and the run's resume, recovery, suspension and end, each at its thread position. So a
 * record stays small whatever the number of steps ({@link runJournalOf} puts the two together).
 */
export class RunJournal {
  private readonly items: JournalItem[];
  private started = false;
  private ended = false;
  /** When this process took the run on. */
  private readonly startedAt: number;
  private readonly previous: RunRecord | undefined;
  /** This process's runner, from the thread's message count when it took the run on. */
  private readonly runner: JournalItem;
  /** The current step's model call and its answer. */
  private model: { step: number; message: AssistantMessage } | undefined;

  constructor(
    private readonly clock: Clock,
    options: {
      previous: RunRecord | undefined;
      runner?: RunJournalRunner | undefined;
      leaseToken: number | undefined;
      history: readonly Message[];
    },
  ) {
    this.startedAt = clock.now();
    const { previous, runner, leaseToken } = options;
    this.previous = previous;
    this.runner = { owner: runner?.owner ?? 'unknown', from: options.history.length };
    if (leaseToken !== undefined) this.runner.token = leaseToken;
    if (runner?.incarnation !== undefined) this.runner.incarnation = runner.incarnation;
    const stored = previous?.state[RUN_JOURNAL_KEY];
    this.items = Array.isArray(stored) ? (stored as unknown as JournalItem[]).slice() : [];
  }

  /** The step's model call answered with `message`: its timing and usage go into the message's metadata. */
  inferred(step: number, ms: number, usage: Usage, message: AssistantMessage): void {
    this.model = { step, message };
    const metadata = message.metadata ?? {};
    metadata.inferredAt = this.clock.now() - ms;
    metadata.modelMs = ms;
    metadata.usage = countsOf(usage);
    message.metadata = metadata;
  }

  /**
   * Writes the journal into `record.state` (a run record being built for a commit, with a `state` of its own);
   * `messages` are the thread's, the run's new ones included.
   */
  stamp(record: RunRecord, messages: readonly Message[]): void {
    if (!this.started) this.start();
    if (record.status !== 'running' && !this.ended && record.termination !== undefined) {
      this.end(record, record.termination, messages);
    }
    // The record is being built for a commit: its `state` is its own object (no copy of it needed).
    record.state[RUN_JOURNAL_KEY] = this.items.slice() as unknown as JsonObject[];
  }

  /** This process's runner, and the resume or recovery it continues the run with. */
  private start(): void {
    this.started = true;
    this.add(this.runner);
    const { previous } = this;
    if (!previous) return;
    const event = previous.status === 'waiting' ? 'resumed' : 'recovered';
    this.add({ event, at: this.startedAt, step: previous.steps, after: this.runner.from });
  }

  /** The suspension or the end, after the step's model call if its answer never joined the thread. */
  private end(record: RunRecord, termination: TerminationReason, messages: readonly Message[]): void {
    this.ended = true;
    const { steps: step } = record;
    const after = messages.length;
    const { model } = this;
    // Cancelled as the answer came: the model call is kept here, its message being gone.
    if (model?.step === step && messages.lastIndexOf(model.message) === -1) {
      const { inferredAt: at, modelMs, usage } = model.message.metadata as JournalItem & JsonObject;
      const calls = callsOf(model.message);
      this.add({
        event: 'step',
        at,
        step,
        after,
        modelMs,
        usage,
        ...(calls ? { calls } : {}),
      } as JournalItem);
    }
    const at = this.clock.now();
    if (termination.type === 'suspended') {
      const tickets = record.openTickets.map((ticket) => ticket.id);
      this.add({ event: 'suspended', at, step, after, tickets });
    } else {
      this.add({ event: 'ended', at, step, after, termination: termination.type });
    }
  }

  private add(item: JournalItem): void {
    this.items.push(item);
    if (this.items.length > RUN_JOURNAL_LIMIT) this.dropOldest(this.items.length - RUN_JOURNAL_LIMIT);
  }

  /** Drops the oldest items; the new first one gets its runner written out (the item naming it is gone). */
  private dropOldest(count: number): void {
    let runner: JournalItem | undefined;
    for (let index = 0; index <= count; index++) {
      if (this.items[index]?.owner !== undefined) runner = this.items[index];
    }
    this.items.splice(0, count);
    const head = this.items[0];
    if (head === undefined || runner === undefined || head.owner !== undefined) return;
    const whole: JournalItem = { ...head, owner: runner.owner };
    for (const key of ['token', 'incarnation', 'from'] as const) {
      if (runner[key] !== undefined) whole[key] = runner[key] as never;
    }
    this.items[0] = whole;
  }
}

/** The counts of a usage that are not zero (what a message keeps: {@link runJournalOf} restores the rest). */
function countsOf(usage: Usage): JsonObject {
  const counts: JsonObject = {};
  for (const key in usage) {
    const count = usage[key as keyof Usage];
    if (count !== 0) counts[key] = count;
  }
  return counts;
}
