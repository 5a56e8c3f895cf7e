import type { AgentWorker } from '@lunation/fleet';
import { AimedStalls } from './aimed-stalls.js';
import { type FaultCounts, FaultSchedule } from './faults.js';
import type { WorldReport } from './inbox-world.js';
import { RevokedHolderCrashes } from './revoked-holder-crashes.js';
import { Scheduler, type SimulatedProcess } from './scheduler.js';
import { type DispatchFaults, SimulatedDispatcher } from './simulated-dispatcher.js';
import { SimulatedStore, type StoreFaults } from './simulated-store.js';
import type { WorldContext } from './world-context.js';
import { stallWindowMs, WorkerFaultDraws, type WorkerFaults } from './world-faults.js';
import { WorldInvariants } from './world-invariants.js';
import { UserJournal } from './world-journal.js';
import { WorldLedger } from './world-ledger.js';
import { SimulatedUser } from './world-user.js';
import { startWorldWorker } from './world-worker.js';

/** Options of {@link runRuntimeWorld}. */
export interface RuntimeWorldOptions {
  /** The seed of the whole world. */
  seed: number;
  /** Worker processes running at once. @default 2 */
  workers?: number;
  /** Threads the runs go to. @default 2 */
  threads?: number;
  /** Runs the user submits to each thread. @default 2 */
  runsPerThread?: number;
  /** Chance that, after a step, one live worker crashes (a new incarnation replaces it). @default 0 */
  crashRate?: number;
  /** Faults of the store. @default none */
  storeFaults?: StoreFaults;
  /** Faults of the dispatcher. @default none */
  dispatchFaults?: DispatchFaults;
  /**
   * The longest extra time a tool's effect takes, drawn per attempt (from a stream of its own): a slow tool, still
   * running when another worker is given its thread. @default 0
   */
  toolDelayMs?: number;
  /**
   * Chance, per gated or interrupt-kind call (`refund`, `notify`, `invoice`) of a step the model answers, that it
   * calls that tool two or three times in the step (drawn from a stream of its own): steps that suspend, or are
   * cut off, with several such calls, so a resume continues several calls in one step. @default 0
   */
  repeatedCalls?: number;
  /**
   * Chance, when a fault takes a worker's claim away (a duplicate or prompt redelivery: another worker gets the
   * thread while this one may still run it), that this worker crashes soon after, as it issues one of its next few
   * operations (`RevokedHolderCrashes`; drawn from a stream of its own). @default 0
   */
  revokedHolderCrash?: number;
  /** Stalls and clock skew of the workers, and faults of their models and tools. @default none */
  workerFaults?: WorkerFaults;
  /**
   * Every worker holds its leases under one owner name, as replicas started from one configuration do (each
   * incarnation still its own). @default false: each worker slot its own owner
   */
  sharedOwner?: boolean;
  /** Keep the whole trace (to print it). @default false */
  keepTrace?: boolean;
  /** Record the trace (its hash and lines); off, the report has neither (for runs that read neither). @default true */
  trace?: boolean;
  /**
   * Inject faults for this many virtual ms; then none, and every run must end before `maxVirtualMs`.
   * @default 300000
   */
  faultsForMs?: number;
  /** Give up after this many virtual ms (runs not done by then are a liveness violation). @default 600000 */
  maxVirtualMs?: number;
  /** Give up after this many real ms (a watchdog: the runtime's own timers are real). @default 30000 */
  maxRealWaitMs?: number;
  /**
   * Inject only the faults with these ordinals (see {@link FaultSchedule}; a shrunk schedule). @default every
   * fault the seed draws
   */
  keepFaults?: ReadonlySet<number>;
}

/**
 * A world of today's runtime over the simulated store and dispatcher: `AgentWorker`s in simulated processes run
 * scripted models and the world's tools (`world-tools.ts`: a re-run tool, a gated one, one of each interrupt
 * policy, a transactional one; each real effect an operation the world ledger counts); a simulated user
 * (`world-user.ts`) submits runs and follow-up input, answers tickets, cancels runs by name and deletes threads
 * through a `FleetClient`; workers crash at any step and come back as new incarnations; every fault is drawn
 * through one `FaultSchedule` (so a failing seed can be shrunk to fewer faults). After every step the invariants
 * (`world-invariants.ts`) are checked from the store, the dispatcher's event logs, the store's table and the
 * user's journal. The runtime's own timers (lease renewal, claim keep-alive, retry sleeps) are still real until
 * the Clock seam is wired: the claim lock and the thread lease are long in virtual time, so they do not lapse
 * while a worker is alive.
 */
export async function runRuntimeWorld(options: RuntimeWorldOptions): Promise<WorldReport> {
  const scheduler = new Scheduler({
    seed: options.seed,
    trace: { keepAll: options.keepTrace ?? false, off: options.trace === false },
  });
  const chaos = scheduler.stream('chaos');
  // Faults stop after the chaos window: a fleet that loses a lease holder every few seconds may never finish (its
  // 30 s leases expire one after another), so liveness is judged once the faults are over, as FoundationDB does.
  const chaosEnds = scheduler.now() + (options.faultsForMs ?? 300_000);
  const schedule = new FaultSchedule(options.keepFaults, () => scheduler.now() >= chaosEnds);
  const store = new SimulatedStore({
    scheduler,
    schedule,
    ...(options.storeFaults ? { faults: options.storeFaults } : {}),
  });
  const dispatcher = new SimulatedDispatcher({
    scheduler,
    schedule,
    ...(options.dispatchFaults ? { faults: options.dispatchFaults } : {}),
    onRevoked: (holder) => revokedHolders.revoked(holder),
  });
  const world: WorldContext = {
    scheduler,
    store,
    dispatcher,
    ledger: new WorldLedger(),
    journal: new UserJournal(),
    violations: [],
    findings: new Set(),
    ...(options.toolDelayMs === undefined ? {} : { toolDelayMs: options.toolDelayMs }),
    ...(options.repeatedCalls === undefined ? {} : { repeatedCalls: options.repeatedCalls }),
    workerFaults: new WorkerFaultDraws(scheduler, options.workerFaults ?? {}, schedule),
  };
  const invariants = new WorldInvariants(world);
  const threadIds = Array.from({ length: options.threads ?? 2 }, (_, index) => `thread-${index + 1}`);
  const live = new Map<number, { process: SimulatedProcess; worker: AgentWorker }>();
  let crashes = 0;
  let generation = 0;

  const ownerOf = (slot: number) => (options.sharedOwner ? 'w' : `w${slot}`);
  const startWorker = (slot: number): void => {
    const process = scheduler.process(`w${slot}.${++generation}`, { skewMs: world.workerFaults.skew() });
    live.set(slot, { process, worker: startWorldWorker(world, process, ownerOf(slot)) });
  };
  const aimed = new AimedStalls(
    scheduler,
    store,
    schedule,
    options.workerFaults?.aimedStall ?? 0,
    (process) => [...live.values()].some((worker) => worker.process === process),
    stallWindowMs,
  );
  /** The worker in `slot` crashes; a new incarnation replaces it. */
  const crash = (slot: number): void => {
    const victim = live.get(slot);
    if (victim === undefined) return;
    crashes++;
    victim.process.crash();
    live.delete(slot);
    startWorker(slot);
  };
  const crashSomeone = (): void => {
    if (live.size === 0 || !chaos.chance(options.crashRate ?? 0)) return;
    // A zombie is not crashed: it is to come back.
    const slots = [...live.keys()].filter((slot) => !aimed.holds(live.get(slot)!.process));
    if (slots.length === 0) return;
    const slot = chaos.pick(slots.sort());
    const victim = live.get(slot);
    if (victim === undefined || !schedule.allows('crash')) return;
    crash(slot);
  };
  const revokedHolders = new RevokedHolderCrashes(scheduler, options.revokedHolderCrash ?? 0, (process) => {
    const slot = [...live.keys()].find((candidate) => live.get(candidate)?.process === process);
    // Not a zombie in an aimed stall: it is to come back.
    if (slot !== undefined && !aimed.holds(process) && schedule.allows('crash')) crash(slot);
  });
  // The zombie: a worker stalls while it holds a thread's lease (mid-run), so it outlives its lease and claim.
  const stallSomeone = (): void => {
    const now = scheduler.now();
    const holders = [...live.keys()]
      .filter((slot) => !live.get(slot)?.process.stalled && holdsLease(store, ownerOf(slot), now))
      .sort();
    if (holders.length === 0) return;
    const ms = world.workerFaults.stall(scheduler.elapsed());
    if (ms > 0) live.get(chaos.pick(holders))?.process.stall(ms);
  };

  for (let slot = 1; slot <= (options.workers ?? 2); slot++) startWorker(slot);
  let userDone = false;
  const user = new SimulatedUser(world);
  void user.run(threadIds, options.runsPerThread ?? 2).then(
    () => {
      userDone = true;
    },
    (error: unknown) => {
      world.violations.push(`the user process failed: ${String(error)}`);
    },
  );
  const done = () => userDone && invariants.open().length === 0;

  const maxTime = scheduler.now() + (options.maxVirtualMs ?? 600_000);
  const realDeadline = performance.now() + (options.maxRealWaitMs ?? 30_000);
  for (;;) {
    const outcome = await scheduler.run({
      until: () => world.violations.length > 0 || done() || performance.now() > realDeadline,
      maxTime,
      afterStep: () => {
        invariants.check();
        crashSomeone();
        stallSomeone();
        aimed.afterStep();
      },
    });
    if (outcome.reason !== 'quiet' || performance.now() > realDeadline) break;
    // Quiet in virtual time while the runtime waits on one of its own real timers: let real time pass.
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (world.violations.length === 0 && !done()) {
    const open = invariants.open();
    const status = (runId: string) => store.backend.runs.get(runId)?.record.status ?? 'never started';
    world.violations.push(
      `liveness: after ${scheduler.elapsed()} virtual ms, ${userDone ? '' : 'the user still waiting; '}runs not done: ${open.map((runId) => `${runId} (${status(runId)})`).join(', ')}`,
    );
  }
  // A worker crashed meanwhile (a revoked holder's crash can come now) is stopped; its successor is not asked.
  const stopping = [...live.values()];
  const stopped = await Promise.all(stopping.map((worker) => stopWorker(scheduler, worker)));
  for (const { process } of stopping.filter((_, index) => !stopped[index])) {
    world.violations.push(
      `liveness: worker ${process.name} did not stop within ${stopBoundMs} virtual ms of being asked to (its deadline: ${stopDeadlineMs} ms)`,
    );
  }
  for (const { process } of live.values()) process.crash();
  scheduler.process('user').crash();
  return {
    seed: options.seed,
    steps: scheduler.steps,
    virtualMs: scheduler.elapsed(),
    traceHash: scheduler.trace.recording ? scheduler.trace.hash() : undefined,
    trace: scheduler.trace.lines(),
    violations: [...new Set(world.violations)],
    findings: [...world.findings],
    faults: {
      ...prefixed('store.', store.faultCounts),
      ...prefixed('dispatch.', dispatcher.faultCounts),
      ...(crashes > 0 ? { crash: crashes } : {}),
      ...countsOf(schedule, ['worker.', 'model.', 'tool.']),
    },
    injected: schedule.injected,
    coverage: invariants.coverage(),
    effects: world.ledger.size + store.database.rows.size,
    crashes,
  };
}

/** The deadline a worker is given to stop at the end of the world (virtual ms). */
const stopDeadlineMs = 1_000;
/** How long a worker asked to stop may take before the world reports it (virtual ms, at most 200,000 steps). */
const stopBoundMs = 60_000;

/**
 * Stops a worker, running the scheduler meanwhile (its claim loop ends on a scheduled operation). False when it
 * is alive and has not stopped within {@link stopBoundMs} virtual ms of being asked (or of the end of its stall),
 * 200,000 steps or 30 s of real time.
 */
async function stopWorker(
  scheduler: Scheduler,
  { process, worker }: { process: SimulatedProcess; worker: AgentWorker },
): Promise<boolean> {
  let stopped = false;
  const stopping = worker.stop({ deadlineMs: stopDeadlineMs }).finally(() => {
    stopped = true;
  });
  const asked = scheduler.now();
  const maxSteps = scheduler.steps + 200_000;
  const realDeadline = performance.now() + 30_000;
  // A process that crashes while it stops never settles `stop` (its timers are gone): it is stopped for good.
  const done = () => stopped || !process.alive;
  // A stalled process does nothing until its stall ends: the bound counts from then.
  const bound = () => Math.max(asked, process.stalledUntil) + stopBoundMs;
  while (!done() && scheduler.steps < maxSteps && performance.now() < realDeadline) {
    const maxTime = bound();
    const outcome = await scheduler.run({ until: done, maxSteps: 1_000, maxTime });
    if (outcome.reason === 'max-time' && maxTime === bound()) break; // no stall moved the bound meanwhile
    if (!done()) await new Promise((resolve) => setTimeout(resolve, 1));
  }
  if (!stopped) {
    stopping.catch(() => {}); // abandoned: its end, if it ever comes, is of no interest
    return !process.alive;
  }
  await stopping;
  return true;
}

function prefixed(prefix: string, counts: FaultCounts): FaultCounts {
  return Object.fromEntries(Object.entries(counts).map(([kind, count]) => [prefix + kind, count]));
}

/** How many faults of the kinds starting with one of `prefixes` the schedule injected (stalls, skews, models, tools). */
function countsOf(schedule: FaultSchedule, prefixes: readonly string[]): FaultCounts {
  const counts: FaultCounts = {};
  for (const { kind } of schedule.injected) {
    if (prefixes.some((prefix) => kind.startsWith(prefix))) counts[kind] = (counts[kind] ?? 0) + 1;
  }
  return counts;
}

/** Whether `owner` holds a live lease on some thread of the store. */
function holdsLease(store: SimulatedStore, owner: string, now: number): boolean {
  for (const slot of store.backend.leases.values()) {
    if (slot.lease?.owner === owner && slot.lease.expiresAt > now) return true;
  }
  return false;
}
