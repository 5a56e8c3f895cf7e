import { logViolations } from './log-invariants.js';
import type { WorldContext } from './world-context.js';

/**
 * The invariants of the runtime world checked after every step, from the store, the dispatcher's event logs, the
 * store's own table of transactional effects and the user's journal (the tools check theirs as each effect
 * happens, see `world-tools.ts`), and the liveness check at the end.
 */
export class WorldInvariants {
  private readonly finished = new Set<string>();
  private readonly ended = new Map<string, number>();
  private readonly seen = new Set<string>();
  /** Threads the store has had (only the user deletes one). */
  private readonly threads = new Set<string>();

  constructor(private readonly world: WorldContext) {}

  /** Runs every check; violations go to the world's list. */
  check(): void {
    this.histories();
    for (const runId of this.world.journal.runs.keys()) {
      this.run(runId);
      this.log(runId);
    }
    this.transactionalEffects();
  }

  /** True when the store had the thread and has it no more: it was deleted. */
  private gone(threadId: string): boolean {
    return this.threads.has(threadId) && !this.world.store.backend.threads.has(threadId);
  }

  /** No thread history holds a message twice or numbers them with a gap. */
  private histories(): void {
    const { store, violations } = this.world;
    for (const slot of store.backend.threads.values()) {
      this.threads.add(slot.id);
      const ids = new Set<string>();
      slot.messages.forEach((record, index) => {
        if (record.seq !== index + 1)
          violations.push(`thread ${slot.id}: message ${index + 1} has seq ${record.seq}`);
        if (ids.has(record.message.id))
          violations.push(`thread ${slot.id}: message ${record.message.id} twice`);
        ids.add(record.message.id);
      });
    }
  }

  /**
   * A run once done stays done (it refuses any resume); a deleted run never comes back; a thread's runs start in
   * the order they were submitted; a run ended by a cancel was named by it.
   */
  private run(runId: string): void {
    const { store, journal, violations, scheduler } = this.world;
    const record = store.backend.runs.get(runId)?.record;
    if (journal.deleted(runId, scheduler.elapsed())) {
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
    const { dispatcher, store, journal, violations } = this.world;
    const threadId = journal.runs.get(runId)?.threadId;
    // Deleted: the journal hears of a delete whose answer was lost only later, so a thread gone is one too.
    if (journal.deleted(runId) || (threadId !== undefined && this.gone(threadId))) return;
    const page = dispatcher.backend.readEvents(runId, 0, 100_000);
    const endedWith = this.ended.get(runId);
    if (endedWith !== undefined && page.events.length > endedWith) {
      violations.push(`run ${runId}: ${page.events.length - endedWith} events appended after its end mark`);
    }
    if (page.ended) this.ended.set(runId, page.events.length);
    else if (endedWith !== undefined && page.events.length < endedWith) this.ended.delete(runId);
    violations.push(
      ...logViolations(
        runId,
        page.events.map(({ event }) => event),
        store.backend.runs.get(runId)?.record,
      ),
    );
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
    return counts;
  }
}
