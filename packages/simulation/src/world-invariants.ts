import type { MessageRecord, RunRecord, ToolExecution } from '@lunation/contract';
import { type EventLogView, logViolations, RunLogChecks } from './log-invariants.js';
import type { WorldContext } from './world-context.js';

/** Where the check of a thread's history stopped: the store's list then, how far it was read, the ids in it. */
interface HistoryCursor {
  messages: readonly MessageRecord[];
  read: number;
  last: MessageRecord | undefined;
  ids: Set<string>;
}

/** What the last check of a run's event log read: while all of it is the same, the check finds the same. */
interface LogSeen {
  log: EventLogView | undefined;
  records: readonly unknown[] | undefined;
  length: number;
  ended: boolean;
  stored: RunRecord | undefined;
}

/**
 * The invariants of the runtime world checked after every step, from the store, the dispatcher's event logs, the
 * store's own table of transactional effects and the user's journal (the tools check theirs as each effect
 * happens, see `world-tools.ts`), and the liveness check at the end. Histories and event logs only grow at their
 * end, so each check reads only what was appended since the step before (what it read before was checked then,
 * and did not change). What a check reads only the store changes (threads, histories, the ledger, the store's table)
 * is checked again only after a step in which the store applied an operation; a run's record and event log are
 * checked again only when either is another object or the log grew or ended (the store replaces a run's record
 * on every change).
 */
export class WorldInvariants {
  private readonly finished = new Set<string>();
  private readonly ended = new Map<string, number>();
  private readonly seen = new Set<string>();
  /** Threads the store has had (only the user deletes one). */
  private readonly threads = new Set<string>();
  private readonly histories = new Map<string, HistoryCursor>();
  private readonly logs: RunLogChecks;
  /** The store's operation count at the last check of what only the store changes. */
  private storeApplied = -1;
  /** How many runs the journal had then. */
  private journalRuns = 0;
  /** Runs whose records were checked: the record then, and whether the run counted as deleted. */
  private readonly runsSeen = new Map<string, { record: RunRecord | undefined; deleted: boolean }>();
  private readonly logsSeen = new Map<string, LogSeen>();
  /** The completed ledger entries seen, by run and tool call id: each as the store had it then, and its result. */
  private readonly completions = new Map<string, { entry: ToolExecution; result: string }>();
  /** The dead letters seen: thread and when. */
  private readonly deadLettersSeen = new Set<string>();

  constructor(private readonly world: WorldContext) {
    this.logs = new RunLogChecks(world.dispatcher.backend);
  }

  /** Runs every check; violations go to the world's list. */
  check(): void {
    const storeChanged = this.world.store.activity.applied !== this.storeApplied;
    this.storeApplied = this.world.store.activity.applied;
    if (storeChanged) {
      this.history();
      this.completedEntries();
    }
    this.deadLetters();
    for (const runId of this.world.journal.runs.keys()) {
      this.run(runId);
      this.log(runId);
    }
    // A row's thread is found through the journal, which grows without a store call.
    if (storeChanged || this.world.journal.runs.size !== this.journalRuns) this.transactionalEffects();
    this.journalRuns = this.world.journal.runs.size;
  }

  /** True when the store had the thread and has it no more: it was deleted. */
  private gone(threadId: string): boolean {
    return this.threads.has(threadId) && !this.world.store.backend.threads.has(threadId);
  }

  /**
   * No thread history holds a message twice or numbers them with a gap. A history read before is read on from
   * where it stopped, unless the store's list is another one (the thread was deleted and made again) or its end
   * is not what was read (then it is read whole).
   */
  private history(): void {
    const { store, violations } = this.world;
    for (const slot of store.backend.threads.values()) {
      this.threads.add(slot.id);
      const { messages } = slot;
      let cursor = this.histories.get(slot.id);
      if (
        cursor === undefined ||
        cursor.messages !== messages ||
        messages.length < cursor.read ||
        (cursor.read > 0 && messages[cursor.read - 1] !== cursor.last)
      ) {
        cursor = { messages, read: 0, last: undefined, ids: new Set() };
        this.histories.set(slot.id, cursor);
      }
      const { ids } = cursor;
      for (let index = cursor.read; index < messages.length; index++) {
        const record = messages[index] as MessageRecord;
        if (record.seq !== index + 1)
          violations.push(`thread ${slot.id}: message ${index + 1} has seq ${record.seq}`);
        if (ids.has(record.message.id))
          violations.push(`thread ${slot.id}: message ${record.message.id} twice`);
        ids.add(record.message.id);
        cursor.last = record;
      }
      cursor.read = messages.length;
    }
  }

  /**
   * No thread is dead-lettered: every submission of the world is valid (a decision the runtime refuses is dropped,
   * not failed) and its faults are transient, which the workers hand back uncounted; the fleet dead-letters a
   * thread only when a submission fails again and again. (Issue 33 item 4: a redelivered claim whose run its
   * previous holder finished meanwhile failed as not retryable and dead-lettered the thread.) Read from the
   * dispatcher after every step: the operator (`world-user.ts`) looks only every 5 s, and the world may end before.
   */
  private deadLetters(): void {
    for (const letter of this.world.dispatcher.backend.work.deadLetters(Number.MAX_SAFE_INTEGER)) {
      const key = `${letter.threadId}@${letter.deadLetteredAt}`;
      if (this.deadLettersSeen.has(key)) continue;
      this.deadLettersSeen.add(key);
      this.world.violations.push(
        `thread ${letter.threadId} was dead-lettered after ${letter.attempts} failed attempts: ${letter.error.code ?? letter.error.message}`,
      );
    }
  }

  /**
   * A completed ledger entry is final: once the store had it, it keeps its status and result (a later begin of the
   * call answers the recorded result; nothing reopens or rewrites it) until its thread is deleted. The store
   * replaces an entry's object on every change, so only an entry that is another object is compared.
   */
  private completedEntries(): void {
    const { store, violations } = this.world;
    for (const [key, seen] of this.completions) {
      const [runId = '', toolCallId = ''] = key.split('\u0000');
      const entry = store.backend.ledger.get(runId)?.get(toolCallId)?.entry;
      if (entry === undefined) this.completions.delete(key);
      else if (entry !== seen.entry) {
        const result = JSON.stringify(entry.result);
        if (entry.status !== 'completed' || result !== seen.result) {
          violations.push(
            `ledger entry ${seen.entry.idempotencyKey} of run ${runId} was completed, now ${entry.status}${entry.status === 'completed' ? ' with another result' : ''}`,
          );
        }
        this.completions.set(key, { entry, result });
      }
    }
    for (const [runId, entries] of store.backend.ledger) {
      for (const [toolCallId, { entry }] of entries) {
        const key = `${runId}\u0000${toolCallId}`;
        if (entry.status === 'completed' && !this.completions.has(key))
          this.completions.set(key, { entry, result: JSON.stringify(entry.result) });
      }
    }
  }

  /**
   * A run once done stays done (it refuses any resume); a deleted run never comes back; a thread's runs start in
   * the order they were submitted; a run ended by a cancel was named by it.
   */
  private run(runId: string): void {
    const { store, journal, violations, scheduler } = this.world;
    const record = store.backend.runs.get(runId)?.record;
    const deleted = journal.deleted(runId, scheduler.elapsed());
    const seen = this.runsSeen.get(runId);
    if (seen !== undefined && seen.record === record && seen.deleted === deleted) return;
    this.runsSeen.set(runId, { record, deleted });
    if (deleted) {
      if (record !== undefined) violations.push(`run ${runId} is in the store after its thread was deleted`);
      return;
    }
    if (record === undefined) return;
    if (!this.seen.has(runId)) {
      this.seen.add(runId);
      const submitted = journal.runs.get(runId);
      for (const earlier of submitted ? journal.runsOf(submitted.threadId) : []) {
        if (earlier.runId === runId) break;
        const before = earlier.acceptedAt !== undefined && earlier.acceptedAt <= (submitted?.sentAt ?? 0);
        if (before && !this.seen.has(earlier.runId) && !journal.deleted(earlier.runId)) {
          violations.push(`run ${runId} started before ${earlier.runId}, submitted earlier to its thread`);
        }
      }
    }
    if (record.status === 'done') this.finished.add(runId);
    else if (this.finished.has(runId)) violations.push(`run ${runId} was done, now ${record.status}`);
    const reason = record.termination?.type === 'cancelled' ? record.termination.reason : undefined;
    const named = reason?.startsWith('stop ') ? reason.slice('stop '.length) : undefined;
    if (named !== undefined && named !== runId)
      violations.push(`run ${runId} was ended by the cancel of ${named}`);
  }

  /**
   * A run's event log takes nothing after its end mark, its `seq`s run without gaps within each lease, nothing
   * follows a final `run-end`, and a final `run-end` is an ending the store has (`logViolations`). A deleted
   * thread's logs are left alone (the store has nothing to compare them with).
   */
  private log(runId: string): void {
    const { store, journal, violations } = this.world;
    const threadId = journal.runs.get(runId)?.threadId;
    // Deleted: the journal hears of a delete whose answer was lost only later, so a thread gone is one too.
    if (journal.deleted(runId) || (threadId !== undefined && this.gone(threadId))) {
      this.logs.forget(runId);
      this.logsSeen.delete(runId);
      return;
    }
    const log = this.world.dispatcher.backend.eventLog(runId);
    const stored = store.backend.runs.get(runId)?.record;
    const seen = this.logsSeen.get(runId);
    if (
      seen !== undefined &&
      seen.log === log &&
      seen.records === log?.records &&
      seen.length === (log?.records.length ?? 0) &&
      seen.ended === (log?.ended ?? false) &&
      seen.stored === stored
    )
      return;
    this.logsSeen.set(runId, {
      log,
      records: log?.records,
      length: log?.records.length ?? 0,
      ended: log?.ended ?? false,
      stored,
    });
    const reading = this.logs.read(runId);
    const endedWith = this.ended.get(runId);
    if (endedWith !== undefined && reading.records.length > endedWith) {
      violations.push(
        `run ${runId}: ${reading.records.length - endedWith} events appended after its end mark`,
      );
    }
    if (reading.ended) this.ended.set(runId, reading.records.length);
    else if (endedWith !== undefined && reading.records.length < endedWith) this.ended.delete(runId);
    for (const violation of logViolations(runId, reading, stored)) violations.push(violation);
  }

  /**
   * A transactional effect happens at most once, and exactly when its call's completion is recorded: every row
   * of the store's table has its ledger entry completed, every successful `book` completion has its row.
   */
  private transactionalEffects(): void {
    const { store, journal, violations } = this.world;
    const { database } = store;
    for (const [key, count] of database.inserts) {
      if (count > 1) violations.push(`transactional effect ${key} committed ${count} times`);
    }
    for (const row of database.rows.values()) {
      // A deleted thread takes its ledger with it; the effect's row stays (it is the application's).
      const threadId = journal.runs.get(row.runId)?.threadId;
      if (threadId === undefined || !store.backend.threads.has(threadId)) continue;
      const entry = store.backend.ledger.get(row.runId)?.get(row.toolCallId)?.entry;
      if (entry?.status !== 'completed') {
        violations.push(
          `transactional effect ${row.key} committed, its ledger entry ${entry?.status ?? 'missing'}`,
        );
      }
    }
    for (const [runId, entries] of store.backend.ledger) {
      for (const { entry } of entries.values()) {
        if (entry.toolName !== 'book' || entry.status !== 'completed' || entry.result?.status !== 'success')
          continue;
        if (!database.rows.has(entry.idempotencyKey)) {
          violations.push(`book ${entry.idempotencyKey} of run ${runId} completed without its row`);
        }
      }
    }
  }

  /**
   * Liveness, once the user is done: every run not deleted is done (a run the user cancelled included), within the
   * virtual bound. Returns the runs that are not.
   */
  open(): string[] {
    const { store, journal, scheduler } = this.world;
    return [...journal.runs.keys()].filter(
      (runId) =>
        !journal.deleted(runId, scheduler.elapsed()) &&
        store.backend.runs.get(runId)?.record.status !== 'done',
    );
  }

  /** What the world reached: runs by how they ended, tickets by answer, cancels, deletes, effects by tool. */
  coverage(): Record<string, number> {
    const { store, journal, ledger } = this.world;
    const counts: Record<string, number> = {};
    const add = (kind: string) => {
      counts[kind] = (counts[kind] ?? 0) + 1;
    };
    for (const runId of journal.runs.keys()) {
      const record = store.backend.runs.get(runId)?.record;
      if (journal.deleted(runId)) add('run deleted');
      else add(`run ${record?.termination?.type ?? record?.status ?? 'never started'}`);
    }
    for (const intent of journal.intents.values()) {
      add(
        `ticket ${intent.ticket.action} ${intent.action === 'cancel' ? 'denied' : (intent.choice ?? 'approved')}`,
      );
    }
    for (const attempt of journal.cancels) {
      add(
        `cancel ${attempt.outcome === undefined ? 'failed' : attempt.outcome.cancelled ? 'cancelled' : 'already ended'}`,
      );
    }
    for (let index = 0; index < journal.deletes.size; index++) add('thread deleted');
    for (const effect of ledger.all())
      add(`effect ${effect.label.split(' ')[0]}${effect.label.endsWith('(rerun)') ? ' rerun' : ''}`);
    for (let index = 0; index < store.database.rows.size; index++) add('effect book (transactional)');
    for (let index = 0; index < ledger.refused().length; index++) add('effect refused (stale fencing token)');
    return counts;
  }
}
