import {
  INTERRUPTED_CALL_ACTION,
  type JsonValue,
  LunationError,
  type ResumeDecision,
  type SuspensionTicket,
} from '@lunation/contract';
import { FleetClient } from '@lunation/fleet';
import type { SimulatedProcess } from './scheduler.js';
import type { SeededRandom } from './seeded-random.js';
import type { SimulatedDispatcher } from './simulated-dispatcher.js';
import type { SimulatedStore } from './simulated-store.js';
import type { WorldContext } from './world-context.js';
import type { CancelAttempt, DecisionIntent, SubmittedRun } from './world-journal.js';
import { worldToolNames } from './world-tools.js';

/** How long the user keeps watching one run before leaving it to the liveness check. */
const watchForMs = 400_000;
/** A decision still not applied this long after it was sent is sent again (the same decision id). */
const resendAfterMs = 3_000;

type CancelMode = 'none' | 'soon' | 'while-waiting' | 'after-end';
type DeleteMode = 'none' | 'at-end' | 'while-waiting';

/**
 * The person at the front, as a process of the world: through a `FleetClient` it submits runs to each thread
 * (sometimes while the previous one is still running: follow-up input), answers every ticket it sees (approves
 * or denies a gated call, chooses rerun / done / fail for an interrupted one; sometimes twice, late, or
 * contradicting itself), cancels runs by name (soon after submitting, while they wait, after they ended), sends
 * decisions to runs that already ended, and deletes threads as the HTTP API does (refused while a lease is held).
 * Every choice is drawn from the seed's `user` stream; what it did goes to the world's journal.
 */
export class SimulatedUser {
  private readonly process: SimulatedProcess;
  private readonly random: SeededRandom;
  private readonly store: SimulatedStore;
  private readonly client: FleetClient;
  private readonly dispatcher: SimulatedDispatcher;
  private finished = false;
  private readonly lastSent = new Map<string, number>();
  private readonly notBefore = new Map<string, number>();

  constructor(private readonly world: WorldContext) {
    this.process = world.scheduler.process('user');
    this.random = world.scheduler.stream('user');
    this.store = world.store.forProcess(this.process);
    this.dispatcher = world.dispatcher.forProcess(this.process);
    this.client = new FleetClient({
      dispatcher: this.dispatcher,
      store: this.store,
      ids: world.scheduler.ids(this.process.name),
    });
  }

  /** Runs the user's script on every thread at once; resolves when it has nothing left to do. */
  async run(threadIds: readonly string[], runsPerThread: number): Promise<void> {
    const operator = this.operate();
    await Promise.all(threadIds.map((threadId) => this.thread(threadId, runsPerThread)));
    this.finished = true;
    await operator;
  }

  /**
   * The operator: every few seconds, resubmits the threads the dispatcher dead-lettered, as the fleet's runbook
   * says. A dead letter is a violation here: only a submission that itself fails repeatedly may be dead-lettered
   * (fleet.md, "Slow is not dead"), and none of the world's does — a lost claim, a lost lease or a store outage is
   * not the submission's failure.
   */
  private async operate(): Promise<void> {
    while (!this.finished) {
      await this.sleep(5_000);
      const dead = await this.dispatcher.deadLetters().catch(() => []);
      for (const letter of dead) {
        this.world.violations.push(
          `thread ${letter.threadId} was dead-lettered (${letter.attempts} failed attempts: ${letter.error.code ?? letter.error.message}), a healthy thread`,
        );
        await this.dispatcher.resubmit(letter.threadId).catch(() => false);
      }
    }
  }

  private now(): number {
    return this.world.scheduler.elapsed();
  }

  private sleep(ms: number): Promise<void> {
    return this.process.clock.sleep(ms);
  }

  /** The run's status as the world sees it (not a call of the user's). */
  private status(runId: string): string | undefined {
    return this.world.store.backend.runs.get(runId)?.record.status;
  }

  private async thread(threadId: string, rounds: number): Promise<void> {
    const { journal } = this.world;
    const deleteMode = this.random.pick<DeleteMode>([
      'none',
      'none',
      'none',
      'none',
      'none',
      'none',
      'at-end',
      'while-waiting',
    ]);
    const watchers: Promise<void>[] = [];
    for (let round = 1; round <= rounds && !journal.deletes.has(threadId); round++) {
      const plan = worldToolNames.filter(() => this.random.chance(0.4));
      const runId = `${threadId}-run-${round}`;
      const run: SubmittedRun = { runId, threadId, plan, sentAt: this.now() };
      journal.runs.set(runId, run);
      const accepted = await this.retry(() =>
        this.client.send({ threadId, input: `${runId}: ${plan.join(' ')}`, runId, agentId: 'a' }),
      ).then(
        () => true,
        () => false,
      );
      if (accepted) {
        run.acceptedAt = this.now();
        // New input supersedes the thread's earlier runs still going: no decision sent from now on counts for them.
        for (const earlier of journal.runsOf(threadId)) {
          if (earlier.runId !== runId && this.status(earlier.runId) !== 'done')
            journal.close(earlier.runId, this.now());
        }
      }
      watchers.push(this.watch(run, round === rounds && deleteMode === 'while-waiting'));
      const pace = this.random.pick(['now', 'running', 'ended'] as const);
      if (pace === 'now') await this.sleep(this.random.int(0, 200));
      else
        await this.waitFor(runId, pace === 'running' ? ['running', 'waiting', 'done'] : ['waiting', 'done']);
    }
    await Promise.all(watchers);
    if (deleteMode === 'at-end') await this.deleteThread(threadId);
  }

  /** Polls until the run has one of `statuses` (or its thread was deleted, or a while passed). */
  private async waitFor(runId: string, statuses: readonly string[]): Promise<void> {
    const until = this.now() + 60_000;
    while (this.now() < until && !this.world.journal.deleted(runId)) {
      const status = await this.store.getRun(runId).then(
        (record) => record?.status,
        () => undefined,
      );
      if (status !== undefined && statuses.includes(status)) return;
      await this.sleep(this.random.int(50, 400));
    }
  }

  /** Follows one run until it ends: answers its tickets, cancels it as drawn, deletes its thread as drawn. */
  private async watch(run: SubmittedRun, deleteWaiting: boolean): Promise<void> {
    let deleteWhileWaiting = deleteWaiting;
    const { journal } = this.world;
    const cancelMode = this.random.pick<CancelMode>([
      'none',
      'none',
      'none',
      'none',
      'none',
      'soon',
      'while-waiting',
      'after-end',
    ]);
    const cancels: Promise<void>[] = [];
    if (cancelMode === 'soon') {
      const delay = this.random.int(0, 1_500);
      cancels.push(this.sleep(delay).then(() => this.cancel(run)));
    }
    let cancelled = cancelMode === 'soon';
    const until = this.now() + watchForMs;
    while (this.now() < until && !journal.deletes.has(run.threadId)) {
      await this.sleep(this.random.int(50, 400));
      const record = await this.store.getRun(run.runId).catch(() => undefined);
      if (record === undefined) continue;
      if (record.status === 'done') {
        if (cancelMode === 'after-end' && !cancelled) await this.cancel(run);
        if (this.random.chance(0.3)) await this.decideLate(run.runId);
        break;
      }
      if (record.status !== 'waiting' || record.openTickets.length === 0) continue;
      if (deleteWhileWaiting) {
        deleteWhileWaiting = false;
        await this.deleteThread(run.threadId);
        // Approves after the delete, too: nothing of the thread may run. (A refused delete: the run goes on.)
        for (const ticket of record.openTickets) await this.decide(ticket);
        continue;
      }
      if (cancelMode === 'while-waiting' && !cancelled) {
        cancelled = true;
        await this.cancel(run);
        continue;
      }
      for (const ticket of record.openTickets) await this.decide(ticket);
    }
    await Promise.all(cancels);
  }

  /** Answers a ticket with the user's intent for it (drawn once), unless sent recently or meant to be late. */
  private async decide(ticket: SuspensionTicket): Promise<void> {
    const { journal } = this.world;
    let intent = journal.intents.get(ticket.id);
    if (intent === undefined) {
      intent = this.intentFor(ticket);
      journal.intents.set(ticket.id, intent);
      if (this.random.chance(0.2)) this.notBefore.set(ticket.id, this.now() + this.random.int(500, 4_000));
    }
    if (this.now() < (this.notBefore.get(ticket.id) ?? 0)) return;
    const last = this.lastSent.get(ticket.id);
    if (last !== undefined && this.now() - last < resendAfterMs) return;
    this.lastSent.set(ticket.id, this.now());
    if (intent.firstSentAt < 0) intent.firstSentAt = this.now();
    await this.send(ticket.runId, this.decisionOf(intent));
    if (this.random.chance(0.25)) await this.send(ticket.runId, this.decisionOf(intent)); // sent twice
    if (this.random.chance(0.1)) {
      // A second, contradicting decision for the same ticket: the first one applied wins, this one must not.
      const contrary: ResumeDecision =
        intent.action === 'resume'
          ? {
              decisionId: `${intent.decisionId}-contrary`,
              ticketId: ticket.id,
              action: 'cancel',
              reason: 'no',
            }
          : {
              ...this.decisionOf({ ...intent, action: 'resume', choice: 'rerun' }),
              decisionId: `${intent.decisionId}-contrary`,
            };
      await this.send(ticket.runId, contrary);
    }
  }

  private intentFor(ticket: SuspensionTicket): DecisionIntent {
    const decisionId = `decision-${ticket.id}`;
    if (ticket.action === INTERRUPTED_CALL_ACTION) {
      const choice = this.random.pick(['rerun', 'rerun', 'done', 'done', 'fail', 'cancel'] as const);
      return choice === 'cancel'
        ? { ticket, decisionId, action: 'cancel', firstSentAt: -1 }
        : { ticket, decisionId, action: 'resume', choice, firstSentAt: -1 };
    }
    return { ticket, decisionId, action: this.random.chance(0.7) ? 'resume' : 'cancel', firstSentAt: -1 };
  }

  private decisionOf(intent: DecisionIntent): ResumeDecision {
    const { decisionId, ticket } = intent;
    if (intent.action === 'cancel')
      return { decisionId, ticketId: ticket.id, action: 'cancel', reason: 'denied' };
    const payloads: Record<string, JsonValue> = {
      rerun: { choice: 'rerun' },
      done: { choice: 'done', result: { settled: 'by hand' } },
      fail: { choice: 'fail', message: 'failed by hand' },
    };
    const payload = intent.choice === undefined ? undefined : payloads[intent.choice];
    return { decisionId, ticketId: ticket.id, action: 'resume', ...(payload ? { payload } : {}) };
  }

  /** Sends decisions for a ticket of `runId`; a refusal (the run ended, the ticket is gone) is an answer too. */
  private async send(runId: string, decision: ResumeDecision): Promise<void> {
    const threadId = this.world.journal.runs.get(runId)?.threadId;
    if (threadId === undefined) return;
    const finishedBefore = this.status(runId) === 'done';
    try {
      const outcome = await this.retry(() => this.client.decide(threadId, [decision]));
      if (finishedBefore && outcome.applied.length > 0) {
        this.world.violations.push(
          `run ${runId} had finished, yet decision ${decision.decisionId} was admitted for it (a finished run refuses resume)`,
        );
      }
    } catch (error) {
      if (!LunationError.isInstance(error)) throw error;
    }
  }

  /** After a run ended: sends one of its decisions again, late (it must be refused or ignored). */
  private async decideLate(runId: string): Promise<void> {
    const intents = [...this.world.journal.intents.values()].filter(
      (intent) => intent.ticket.runId === runId,
    );
    if (intents.length === 0) return;
    const intent = this.random.pick(intents);
    await this.send(runId, this.decisionOf(intent));
  }

  /** Cancels a run by name, as a front does. */
  private async cancel(run: SubmittedRun): Promise<void> {
    const attempt: CancelAttempt = { runId: run.runId, threadId: run.threadId, startedAt: this.now() };
    this.world.journal.cancels.push(attempt);
    const finishedBefore = this.status(run.runId) === 'done';
    try {
      const outcome = await this.retry(() =>
        this.client.cancel(run.threadId, { runId: run.runId, reason: `stop ${run.runId}` }),
      );
      attempt.outcome = {
        cancelled: outcome.cancelled,
        ...(outcome.termination ? { termination: outcome.termination } : {}),
        at: this.now(),
      };
      if (outcome.cancelled) this.world.journal.close(run.runId, this.now());
      if (outcome.cancelled && finishedBefore) {
        this.world.violations.push(
          `cancel of run ${run.runId} said cancelled, but the run had finished before`,
        );
      }
    } catch (error) {
      if (!LunationError.isInstance(error)) throw error;
    }
  }

  /**
   * Deletes a thread through the `FleetClient` (refused while a worker holds it or its inbox holds submissions;
   * retried a while, then given up).
   */
  private async deleteThread(threadId: string): Promise<void> {
    const existed = this.world.store.backend.threads.has(threadId);
    try {
      await this.retry(() => this.client.deleteThread(threadId));
    } catch (error) {
      if (!LunationError.isInstance(error)) throw error;
    }
    // A delete whose answer was lost may have applied (a retry then finds nothing to delete): the world looks.
    if (!existed || this.world.store.backend.threads.has(threadId)) return;
    const { journal } = this.world;
    const runIds = journal.runsOf(threadId).map((run) => run.runId);
    journal.deletes.set(threadId, { at: this.now(), runIds });
    for (const runId of runIds) journal.close(runId, this.now());
  }

  /** Calls `call` until it answers or fails for good (retryable store / dispatcher errors are retried). */
  private async retry<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        if (attempt >= 30 || !LunationError.isInstance(error) || !error.isRetryable) throw error;
        await this.sleep(this.random.int(50, 300));
      }
    }
  }
}
