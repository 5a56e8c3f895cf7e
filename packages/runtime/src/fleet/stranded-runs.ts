import type { Dispatcher, LunationStore } from '@lunation/contract';
import { type ScanPosition, threadsWithLatestRun } from '../thread-scan.js';

/** What {@link submitStrandedRuns} takes. */
export interface StrandedRunsScan {
  store: LunationStore;
  dispatcher: Dispatcher;
  /** How many threads one scan reads at most. */
  scanLimit: number;
  /** Where the last scan stopped: this one goes on from there (and moves it on). */
  position: ScanPosition;
}

/**
 * The fleet's `resumeCutOffRuns`: finds threads whose latest run is `running` while no process holds their lease
 * (its worker died, and the thread's job is gone too — a dispatcher that lost it, or a thread resubmitted from its
 * dead letters) and files a `continue` submission for each, so a worker claims the thread and its recovery
 * continues the run. A thread that still has its job is only woken twice, which changes nothing: the submission's
 * id names the run and its last commit, so repeated scans file it once. A store with more threads than one scan
 * reads is covered over several scans, each going on where the last stopped. Resolves the threads filed.
 */
export async function submitStrandedRuns(scan: StrandedRunsScan): Promise<string[]> {
  const { store, dispatcher, scanLimit, position } = scan;
  const filed: string[] = [];
  for await (const page of threadsWithLatestRun(store, scanLimit, position)) {
    for (const { thread, latest } of page) {
      if (latest?.status !== 'running' || (await store.getLease(thread.id)) !== undefined) continue;
      const { runId } = latest.identity;
      const submitted = await dispatcher.submit({
        id: `continue:${runId}:${latest.updatedAt}`,
        threadId: thread.id,
        ...(thread.resourceId === undefined ? {} : { resourceId: thread.resourceId }),
        request: { type: 'continue', runId },
      });
      if (!submitted.duplicate) filed.push(thread.id);
    }
  }
  return filed;
}
