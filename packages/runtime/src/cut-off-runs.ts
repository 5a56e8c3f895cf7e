import { type Clock, LunationError, type LunationStore, systemClock } from '@lunation/contract';
import type { RunHandle, RunOptions } from './executor/run-options.js';
import { continuedRun } from './executor/settle-thread.js';
import { threadsWithLatestRun } from './thread-scan.js';

/** Options of {@link AgentRuntime.resumeCutOffRuns}. */
export interface ResumeCutOffRunsOptions {
  /** How many threads the scan reads at most (oldest first). @default 1000 */
  scanLimit?: number;
  /**
   * How long a thread still leased by a process that stopped renewing (a killed previous life) is retried until
   * its lease lapses. A thread still busy then is reported in `busy`. @default 10000
   */
  busyWaitMs?: number;
  /** Called with each continued run's handle as it starts (e.g. to stream its events). */
  onRun?: (run: RunHandle) => void;
}

/** What each thread's continuation shares: where to start runs, until when to retry, and where to report. */
interface Continuation {
  store: LunationStore;
  start: (options: RunOptions) => Promise<RunHandle>;
  /** The clock's time after which a busy thread is reported instead of retried. */
  until: number;
  onRun: ((run: RunHandle) => void) | undefined;
  outcome: ResumedCutOffRuns;
  clock: Clock;
}

/** What {@link AgentRuntime.resumeCutOffRuns} did. */
export interface ResumedCutOffRuns {
  /** The continued runs, in the order they started. */
  resumed: RunHandle[];
  /** Threads with a cut-off run that stayed busy (an active run here or a live lease elsewhere). */
  busy: string[];
  /** Threads whose continuation failed to start, with the error. */
  failed: Array<{ threadId: string; error: unknown }>;
}

/**
 * Finds the threads of `store` whose latest run was cut off (its process died mid-run) and continues each
 * through `start` (a run with no input), retrying a thread whose lease has not lapsed yet for `busyWaitMs` (waits
 * on `clock`).
 */
export async function resumeCutOffRuns(
  store: LunationStore,
  start: (options: RunOptions) => Promise<RunHandle>,
  options: ResumeCutOffRunsOptions = {},
  clock: Clock = systemClock,
): Promise<ResumedCutOffRuns> {
  const scanLimit = options.scanLimit ?? 1_000;
  const busyWaitMs = options.busyWaitMs ?? 10_000;
  if (!Number.isSafeInteger(scanLimit) || scanLimit < 0 || !(busyWaitMs >= 0)) {
    throw new LunationError(
      'invalid-argument',
      'resumeCutOffRuns() needs `scanLimit` and `busyWaitMs` to be non-negative numbers (a whole number of threads)',
    );
  }
  const outcome: ResumedCutOffRuns = { resumed: [], busy: [], failed: [] };
  const continuation: Continuation = {
    store,
    start,
    until: clock.now() + busyWaitMs,
    onRun: options.onRun,
    outcome,
    clock,
  };
  const pending: Array<Promise<void>> = [];
  for await (const page of threadsWithLatestRun(store, scanLimit)) {
    for (const { thread, latest } of page) {
      const cutOff = continuedRun(latest);
      if (cutOff === undefined) continue;
      const run: RunOptions = {
        threadId: thread.id,
        ...(thread.resourceId === undefined ? {} : { resourceId: thread.resourceId }),
      };
      pending.push(continueThread(continuation, run, cutOff.identity.runId));
    }
  }
  await Promise.all(pending);
  return outcome;
}

/**
 * Continues the thread's cut-off run `runId`, retrying while its lease lasts; stops quietly when the run is no
 * longer the thread's cut-off run (it ended meanwhile: its holder was alive).
 */
async function continueThread(continuation: Continuation, run: RunOptions, runId: string): Promise<void> {
  const { store, start, until, onRun, outcome, clock } = continuation;
  while (true) {
    try {
      const handle = await start(run);
      outcome.resumed.push(handle);
      onRun?.(handle);
      return;
    } catch (error) {
      if (!LunationError.hasCode(error, 'thread-busy')) {
        outcome.failed.push({ threadId: run.threadId, error });
        return;
      }
      const retryAfterMs = Number(error.details?.retryAfterMs);
      // No retry time: the run is active in this process; past the wait: a live process holds the thread.
      if (!Number.isFinite(retryAfterMs) || clock.now() >= until) {
        outcome.busy.push(run.threadId);
        return;
      }
      const delay = Math.min(Math.max(retryAfterMs, 100), 1_000, Math.max(until - clock.now(), 0));
      await clock.sleep(delay);
      // Without input, a run on a thread whose run ended would be a new run: only continue the same one.
      if (continuedRun(await store.getLatestRun(run.threadId))?.identity.runId !== runId) return;
    }
  }
}
