import { type DispatchClaim, LunationError, type UserMessage } from '@lunation/contract';
import { type FaultCounts, FaultSchedule, type ScheduledFault } from './faults.js';
import { Scheduler } from './scheduler.js';
import { type DispatchFaults, SimulatedDispatcher } from './simulated-dispatcher.js';
import { SimulatedStore, type StoreFaults } from './simulated-store.js';
import { WorldLedger } from './world-ledger.js';

/**
 * Deliberate defects of the inbox protocol, for checking that the simulator finds them: `skip-applied-check`
 * applies a submission without looking whether it already was; `early-acknowledge` acknowledges submissions
 * before their commit.
 */
export type InboxMutation = 'skip-applied-check' | 'early-acknowledge';

/** Options of {@link runInboxWorld}. */
export interface InboxWorldOptions {
  /** The seed of the whole world. */
  seed: number;
  /** Worker processes running at once. @default 3 */
  workers?: number;
  /** Threads the submissions go to. @default 3 */
  threads?: number;
  /** Submissions made in all. @default 12 */
  submissions?: number;
  /** Faults of the store. @default none */
  storeFaults?: StoreFaults;
  /** Faults of the dispatcher. @default none */
  dispatchFaults?: DispatchFaults;
  /** Chance that a worker crashes at each of its steps (a new incarnation replaces it). @default 0 */
  crashRate?: number;
  /** A deliberate defect to plant. @default none */
  mutation?: InboxMutation;
  /** Keep the whole trace (to print it). @default false */
  keepTrace?: boolean;
  /** Record the trace (its hash and lines); off, the report has neither (for runs that read neither). @default true */
  trace?: boolean;
  /** Give up after this many virtual ms. @default 600000 */
  maxVirtualMs?: number;
  /** Inject only the faults with these ordinals (a shrunk schedule). @default every fault the seed draws */
  keepFaults?: ReadonlySet<number>;
}

/** What one world run did and found. */
export interface WorldReport {
  seed: number;
  /** Scheduler steps taken. */
  steps: number;
  /** Virtual milliseconds the world ran. */
  virtualMs: number;
  /** SHA-256 of the trace: the same seed gives the same hash. Undefined when the trace was off. */
  traceHash: string | undefined;
  /** Lines of the trace that were kept (all with `keepTrace`). */
  trace: string[];
  /** Invariant violations, the first one first; empty when none. */
  violations: string[];
  /** Things worth a look that break no invariant of the protocol (they do not fail a seed). */
  findings: string[];
  /** Faults injected, by kind. */
  faults: FaultCounts;
  /** Real effects the world ledger counted. */
  effects: number;
  /** Crashes injected. */
  crashes: number;
  /** Every fault injected, in order, with its ordinal (what `keepFaults` names). */
  injected: ScheduledFault[];
  /** What the world reached, by kind (runs by how they ended, tickets answered, cancels, deletes, effects). */
  coverage?: Record<string, number>;
}

const ttlMs = 3_000;
const lockMs = 2_000;

/**
 * A small world over the simulated store and dispatcher, without the runtime: worker processes claim threads,
 * take the thread's lease, apply each pending submission once (a message whose id is the submission's, and a
 * real effect the world ledger counts), acknowledge and complete; workers crash and come back; faults are
 * injected. After every step the invariants are checked from the store and the ledger: no submission applied
 * twice, no effect twice, messages numbered without gaps. At the end (faults still on), every submission is
 * applied once (liveness).
 */
export async function runInboxWorld(options: InboxWorldOptions): Promise<WorldReport> {
  const scheduler = new Scheduler({
    seed: options.seed,
    trace: { keepAll: options.keepTrace ?? false, off: options.trace === false },
  });
  const random = scheduler.stream('world');
  const chaos = scheduler.stream('chaos');
  const schedule = new FaultSchedule(options.keepFaults);
  const store = new SimulatedStore({
    scheduler,
    schedule,
    ...(options.storeFaults ? { faults: options.storeFaults } : {}),
  });
  const dispatcher = new SimulatedDispatcher({
    scheduler,
    schedule,
    ...(options.dispatchFaults ? { faults: options.dispatchFaults } : {}),
  });
  const ledger = new WorldLedger();
  const violations: string[] = [];
  const threadIds = Array.from({ length: options.threads ?? 3 }, (_, index) => `thread-${index + 1}`);
  const submissionIds: string[] = [];
  const crashRate = options.crashRate ?? 0;
  let crashes = 0;
  let generation = 0;

  const setup = store.forProcess(scheduler.world, {});
  for (const threadId of threadIds) await settle(scheduler, setup.createThread({ id: threadId }));

  const startWorker = (slot: number): void => {
    generation++;
    const process = scheduler.process(`w${slot}.${generation}`);
    const incarnation = `${process.name}`;
    const storeView = store.forProcess(process);
    const dispatcherView = dispatcher.forProcess(process);
    const crashPoint = () => {
      if (!chaos.chance(crashRate) || !schedule.allows('crash')) return;
      crashes++;
      process.crash();
      startWorker(slot);
    };
    const work = async (claim: DispatchClaim): Promise<void> => {
      let lease: { token: number };
      try {
        lease = await storeView.acquireLease({
          threadId: claim.threadId,
          owner: `w${slot}`,
          incarnation,
          runId: 'inbox',
          ttlMs,
        });
      } catch (error) {
        if (!LunationError.isInstance(error)) throw error;
        await dispatcherView.handBack(claim, { delayMs: 100 });
        return;
      }
      crashPoint();
      const pending = await dispatcherView.pending(claim.threadId);
      if (options.mutation === 'early-acknowledge') {
        await dispatcherView.acknowledge(
          claim.threadId,
          pending.map((entry) => entry.id),
        );
        crashPoint();
      }
      const checkpoint = await storeView.loadCheckpoint(claim.threadId);
      let count = checkpoint?.thread.messageCount ?? 0;
      const applied = new Set(checkpoint?.messages.map((record) => record.message.id));
      for (const entry of pending) {
        if (options.mutation !== 'skip-applied-check' && applied.has(entry.id)) continue;
        const message: UserMessage = {
          id: entry.id,
          role: 'user',
          content: [{ type: 'text', text: entry.id }],
        };
        const result = await storeView.commit({
          threadId: claim.threadId,
          expectedMessageCount: count,
          messages: [message],
          leaseToken: lease.token,
        });
        count = result.messageCount;
        ledger.record({ key: entry.id, process: process.name, label: 'applied', at: scheduler.elapsed() });
        crashPoint();
      }
      await dispatcherView.acknowledge(
        claim.threadId,
        pending.map((entry) => entry.id),
      );
      crashPoint();
      await storeView.releaseLease({ threadId: claim.threadId, token: lease.token });
      await dispatcherView.complete(claim);
    };
    const loop = async (): Promise<void> => {
      while (process.alive) {
        const claim = await dispatcherView
          .claim({ workerId: process.name, lockMs, waitMs: 1_000 })
          .catch(() => undefined);
        if (claim === undefined) {
          if (done()) return;
          continue;
        }
        crashPoint();
        try {
          await work(claim);
        } catch (error) {
          if (!LunationError.isInstance(error)) {
            violations.push(`${process.name}: unexpected ${String(error)}`);
            return;
          }
          await dispatcherView.handBack(claim, { delayMs: random.int(0, 200) }).catch(() => undefined);
        }
      }
    };
    void loop();
  };

  const appliedCount = (): Map<string, number> => {
    const counts = new Map<string, number>();
    for (const slot of store.backend.threads.values()) {
      for (const record of slot.messages)
        counts.set(record.message.id, (counts.get(record.message.id) ?? 0) + 1);
    }
    return counts;
  };
  const done = (): boolean => {
    if (submissionIds.length < (options.submissions ?? 12)) return false;
    const counts = appliedCount();
    return submissionIds.every((id) => counts.has(id));
  };
  const check = (): void => {
    for (const [id, count] of appliedCount()) {
      if (count > 1) violations.push(`submission ${id} applied ${count} times in the store`);
    }
    for (const [key, effects] of ledger.repeated()) {
      violations.push(
        `effect ${key} happened ${effects.length} times (${effects.map((e) => e.process).join(', ')})`,
      );
    }
    for (const slot of store.backend.threads.values()) {
      slot.messages.forEach((record, index) => {
        if (record.seq !== index + 1)
          violations.push(`thread ${slot.id}: message ${index} has seq ${record.seq}`);
      });
    }
  };

  const submitter = scheduler.process('client');
  const submitterView = dispatcher.forProcess(submitter);
  const submit = async (): Promise<void> => {
    for (let index = 0; index < (options.submissions ?? 12); index++) {
      const id = `s${index + 1}`;
      const threadId = random.pick(threadIds);
      submissionIds.push(id);
      for (;;) {
        try {
          await submitterView.submit({ id, threadId, request: { type: 'continue', runId: 'inbox' } });
          break;
        } catch {
          await submitter.clock.sleep(50);
        }
      }
      await submitter.clock.sleep(random.int(0, 300));
    }
  };

  for (let slot = 1; slot <= (options.workers ?? 3); slot++) startWorker(slot);
  void submit();

  const maxVirtualMs = options.maxVirtualMs ?? 600_000;
  const started = scheduler.now();
  const outcome = await scheduler.run({
    until: () => violations.length > 0 || done(),
    maxTime: started + maxVirtualMs,
    afterStep: check,
  });
  if (violations.length === 0 && !done()) {
    violations.push(
      `liveness: after ${scheduler.elapsed()} virtual ms (${outcome.reason}) ${submissionIds.filter((id) => !appliedCount().has(id)).length} submissions were never applied`,
    );
  }
  return {
    seed: options.seed,
    steps: scheduler.steps,
    virtualMs: scheduler.elapsed(),
    traceHash: scheduler.trace.recording ? scheduler.trace.hash() : undefined,
    trace: scheduler.trace.lines(),
    violations: [...new Set(violations)],
    findings: [],
    faults: {
      ...prefixed('store.', store.faultCounts),
      ...prefixed('dispatch.', dispatcher.faultCounts),
      ...(crashes > 0 ? { crash: crashes } : {}),
    },
    effects: ledger.size,
    crashes,
    injected: schedule.injected,
  };
}

/** Runs the scheduler until `promise` settles (setup calls made before the world starts). */
async function settle<T>(scheduler: Scheduler, promise: Promise<T>): Promise<T> {
  let finished = false;
  const watched = promise.finally(() => {
    finished = true;
  });
  await scheduler.run({ until: () => finished });
  return watched;
}

function prefixed(prefix: string, counts: FaultCounts): FaultCounts {
  return Object.fromEntries(Object.entries(counts).map(([kind, count]) => [prefix + kind, count]));
}
