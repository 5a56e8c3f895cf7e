import type { KillTarget } from '../../fixtures/kill-switch.js';
import { Journal } from '../../fixtures/soak-journal.js';
import type { SoakProcessConfig } from '../../fixtures/soak-process.js';
import type { KillKind, KillPlan, SoakBatch, SoakRun } from '../../fixtures/soak-scenario.js';
import type { SoakTwinConfig, TwinCounts } from '../../fixtures/soak-twin.js';
import type { StoreConnection } from '../../fixtures/store-connection.js';
import { startFixtureProcess } from '../process-harness.js';

export interface BatchRunOptions {
  connection: StoreConnection;
  journalPath: string;
  leaseTtlMs: number;
  /** A lease owner every process of the batch shares. */
  owner?: string;
  /**
   * Runs a live twin beside the driving processes for the whole batch, under `owner` (required then), trying to
   * continue every running run: it must be refused while the driving process lives.
   */
  twin?: boolean;
  /**
   * Kill every run at least this many times: while an open run has been cut short fewer times, the next
   * process is killed at that run's first model call, before the batch's planned kills. 0: the plan only.
   */
  minKillsPerRun?: number;
}

export interface KillRecord {
  kind: KillKind;
  /** False when the process finished before reaching the aimed-at point. */
  landed: boolean;
  /** Runs of the batch still going in the process when it died. */
  runsHit: number;
}

export interface BatchOutcome {
  processes: number;
  kills: KillRecord[];
  /** Runs some process gave up on, with its reason: it could neither continue nor decide them. */
  stranded: Map<string, string>;
  /** Child processes that failed on their own (not killed): the harness or the runtime crashed. */
  crashes: string[];
  /** How many landed kills cut each run short (by thread id; 0 for runs no kill reached). */
  killsByRun: Map<string, number>;
  /** What the live twin did, when the batch had one. */
  twin?: TwinCounts;
}

/** The twin's process number in the journal: above any driving process's. */
const twinGeneration = 1_000;

/** A process that takes this long hangs: a run never ends or never gives up on a busy thread. */
const hangLimitMs = 60_000;

/** Each run may suspend (and be left to the next process) at most once per step. */
function processLimit(batch: SoakBatch): number {
  const steps = batch.runs.reduce((sum, run) => sum + run.steps.length, 0);
  return batch.kills.length + steps + 3;
}

/**
 * Drives a batch to its end: starts a child process on the runs that are not finished, kills it as the next
 * kill plan says (at a milestone of one run, or after a random time), and starts a new one, until every run
 * is finished or stranded. The last process of a batch is never killed.
 */
export async function runBatch(batch: SoakBatch, options: BatchRunOptions): Promise<BatchOutcome> {
  const journal = new Journal(options.journalPath, 0);
  const open = new Map<string, SoakRun>(batch.runs.map((run) => [run.threadId, run]));
  const outcome: BatchOutcome = {
    processes: 0,
    kills: [],
    stranded: new Map(),
    crashes: [],
    killsByRun: new Map(batch.runs.map((run) => [run.threadId, 0])),
  };
  const twin = options.twin ? startTwin(batch, options, outcome) : undefined;
  try {
    await driveBatch(batch, options, journal, open, outcome);
  } finally {
    if (twin) await twin.stop();
  }
  return outcome;
}

/** Starts the batch's live twin; `stop()` ends it (SIGTERM, then its counts) and records a failure as a crash. */
function startTwin(batch: SoakBatch, options: BatchRunOptions, outcome: BatchOutcome) {
  if (options.owner === undefined) throw new Error('a batch with a twin needs a shared owner');
  const config: SoakTwinConfig = {
    connection: options.connection,
    journal: options.journalPath,
    generation: twinGeneration,
    runs: batch.runs,
    leaseTtlMs: options.leaseTtlMs,
    owner: options.owner,
  };
  const child = startFixtureProcess('soak-twin.ts', config);
  child.onLine((line) => {
    if (line.event === 'twin-done') {
      const { attempts, busy, continued, nothingToDo } = line as unknown as TwinCounts;
      outcome.twin = { attempts, busy, continued, nothingToDo };
    }
  });
  return {
    async stop(): Promise<void> {
      child.child.kill('SIGTERM');
      const watchdog = setTimeout(() => child.child.kill('SIGKILL'), hangLimitMs);
      const code = await child.exited;
      clearTimeout(watchdog);
      if (code !== 0 || outcome.twin === undefined) {
        outcome.crashes.push(
          `the twin process ${child.child.pid} (batch ${batch.index}) exited with ${code ?? child.child.signalCode}:\n${child.stderr().slice(-4_000)}`,
        );
      }
    },
  };
}

/** Starts driving processes one after another, killing them as planned, until every run ended. */
async function driveBatch(
  batch: SoakBatch,
  options: BatchRunOptions,
  journal: Journal,
  open: Map<string, SoakRun>,
  outcome: BatchOutcome,
): Promise<void> {
  const plans: Array<KillPlan & { extra?: boolean }> = [...batch.kills];
  const minKills = options.minKillsPerRun ?? 0;
  const limit = processLimit(batch) + minKills * batch.runs.length;
  while (open.size > 0) {
    if (outcome.processes >= limit) {
      for (const threadId of open.keys())
        outcome.stranded.set(threadId, `still not finished after ${limit} processes tried to continue it`);
      break;
    }
    const runs = [...open.values()];
    // A run not yet cut short `minKills` times is killed first, at its next model call (every run still open
    // makes one); the batch's planned kills follow.
    const underKilled = runs.findIndex((run) => (outcome.killsByRun.get(run.threadId) ?? 0) < minKills);
    if (underKilled >= 0 && plans[0]?.extra !== true) {
      plans.unshift({ kind: 'model-call', target: underKilled, occurrence: 1, delayMs: 0, extra: true });
    }
    const plan = plans[0];
    const aimedAt = plan ? runs[plan.target % runs.length] : undefined;
    const kill: KillTarget | undefined =
      plan && aimedAt && plan.kind !== 'random-time'
        ? { threadId: aimedAt.threadId, kind: plan.kind, occurrence: plan.occurrence }
        : undefined;
    const config: SoakProcessConfig = {
      connection: options.connection,
      journal: options.journalPath,
      generation: ++outcome.processes,
      runs,
      leaseTtlMs: options.leaseTtlMs,
      ...(kill ? { kill } : {}),
      ...(options.owner === undefined ? {} : { owner: options.owner }),
    };
    const child = startFixtureProcess('soak-process.ts', config);
    const going = new Set(runs.map((run) => run.threadId));
    let frozen = false;
    let timer: NodeJS.Timeout | undefined;
    child.onLine((line) => {
      const threadId = String(line.threadId ?? '');
      if (line.event === 'ready' && plan?.kind === 'random-time')
        timer = setTimeout(() => child.child.kill('SIGKILL'), plan.delayMs);
      else if (line.event === 'frozen') {
        frozen = true;
        child.child.kill('SIGKILL');
      } else if (line.event === 'thread-finished') {
        open.delete(threadId);
        going.delete(threadId);
      } else if (line.event === 'thread-parked') going.delete(threadId);
      else if (line.event === 'thread-stuck') {
        open.delete(threadId);
        going.delete(threadId);
        outcome.stranded.set(threadId, String(line.reason));
      }
    });
    let hung = false;
    const watchdog = setTimeout(() => {
      hung = true;
      child.child.kill('SIGKILL');
    }, hangLimitMs);
    const code = await child.exited;
    clearTimeout(watchdog);
    if (timer) clearTimeout(timer);
    if (hung) {
      outcome.crashes.push(
        `process ${child.child.pid} (batch ${batch.index}, process ${outcome.processes}) was still running after ${hangLimitMs / 1000} s and was killed`,
      );
      for (const threadId of going)
        outcome.stranded.set(threadId, `its process hung for ${hangLimitMs / 1000} s without finishing it`);
      break;
    }
    if (child.child.signalCode === 'SIGKILL' && plan) {
      journal.append({
        type: 'killed',
        victim: outcome.processes,
        victimPid: child.child.pid ?? 0,
        kind: plan.kind,
        ...(kill ? { threadId: kill.threadId } : {}),
        frozen,
      });
      outcome.kills.push({ kind: plan.kind, landed: true, runsHit: going.size });
      for (const threadId of going)
        outcome.killsByRun.set(threadId, (outcome.killsByRun.get(threadId) ?? 0) + 1);
      plans.shift();
    } else if (code === 0) {
      if (plan) outcome.kills.push({ kind: plan.kind, landed: false, runsHit: 0 });
      plans.shift();
    } else {
      outcome.crashes.push(
        `process ${child.child.pid} (batch ${batch.index}, process ${outcome.processes}) exited with ${code ?? child.child.signalCode}:\n${child.stderr().slice(-4_000)}`,
      );
      for (const threadId of open.keys())
        outcome.stranded.set(
          threadId,
          `its process crashed on its own (exit ${code ?? child.child.signalCode})`,
        );
      break;
    }
  }
}
