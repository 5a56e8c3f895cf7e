import type { FleetExecution, FleetJournalLine } from '../../fixtures/fleet-journal.js';
import { type FleetViolation, fleetInvariants, type ThreadEvidence } from './fleet-invariants.js';
import type { FleetSettings } from './fleet-settings.js';
import type { FleetUserClient } from './fleet-user-client.js';
import type { FrontPool } from './front-pool.js';
import { describeStaleEffect, type TargetView } from './target-fencing.js';
import type { WorkerPool } from './worker-pool.js';

/** What the test measures and counts, for its summary. */
export interface FleetFigures {
  backend: string;
  seconds: number;
  threads: ThreadEvidence[];
  /** The journal as the tools' target accepted it (see `fenceAtTarget`). */
  journal: FleetJournalLine[];
  /** What the target refused, and how many tool entries there were. */
  target: TargetView;
  pool: WorkerPool;
  fronts: FrontPool;
  users: FleetUserClient;
  violations: FleetViolation[];
}

/** The summary every run prints: size, disturbances, latencies, cancels, violations per invariant. */
export function fleetSummary(settings: FleetSettings, figures: FleetFigures): string {
  const { journal, pool, threads, fronts } = figures;
  const frontKills = fronts.disturbances.filter((disturbance) => disturbance.kind === 'kill').length;
  const runs = threads.flatMap((thread) => thread.runs);
  const starts = journal.filter((line): line is FleetExecution => line.type === 'execution-start');
  const failures = journal.filter((line) => line.type === 'append-failure');
  const killLatencies = rerunLatencies(
    starts,
    journal,
    pool.kills.map((kill) => ({ worker: kill.worker, at: kill.at })),
  );
  const stallLatencies = rerunLatencies(
    starts,
    journal,
    pool.stalls.filter((stall) => stall.long).map((stall) => ({ worker: stall.worker, at: stall.start })),
  );
  const cancels = runs.flatMap((run) => run.driven.cancels.map((cancel) => ({ cancel, run })));
  const cancelledEnds = cancels.filter(({ run }) => run.record?.termination?.type === 'cancelled').length;
  const count = (items: unknown[]) => items.length;
  return [
    `fleet on ${figures.backend}: seed ${settings.seed}, ${threads.length} threads, ${runs.length} runs (${runs.length - threads.length} follow-ups), ${settings.workers} workers × ${settings.concurrency}, ${figures.seconds.toFixed(1)} s, ${(runs.length / figures.seconds).toFixed(2)} runs/s`,
    `  disturbances: workers killed ${pool.kills.length}; stalled ${pool.stalls.length} (${count(pool.stalls.filter((stall) => stall.long))} past the ${settings.leaseTtlMs} ms lease); CPU hogs ${settings.cpuHogs} at ${settings.cpuHogDuty}; append failures injected ${failures.length} (${count(failures.filter((line) => line.type === 'append-failure' && line.when === 'after'))} after appending); worker errors ${pool.workerErrors.length}; workers frozen (no heartbeat for 10 s, not stopped by the test) ${pool.freezes.length}`,
    `  fronts (2, HTTP, in processes of their own): killed ${frontKills}; stalled ${fronts.disturbances.length - frontKills} (1–3 × the ${settings.requestTimeoutMs} ms request timeout); requests retried on the other front ${figures.users.retries}; front errors (500) ${fronts.frontErrors.length}`,
    `  tool entries ${figures.target.entries}; effects accepted by the target ${starts.length} (re-runs ${count(starts.filter((start) => start.rerun))}); stale effects refused by the target ${figures.target.refused.length}`,
    ...figures.target.refused
      .slice(0, 20)
      .map((stale) => `    refused: ${describeStaleEffect(stale, [...pool.stalls, ...pool.freezes])}`),
    `  approvals ${runs.reduce((sum, run) => sum + run.driven.approvedAt.size, 0)} (calls asked again after their approval ${runs.reduce((sum, run) => sum + run.driven.askedAgain.length, 0)}); stream reconnects ${runs.reduce((sum, run) => sum + run.driven.reconnects, 0)}; events seen ${runs.reduce((sum, run) => sum + run.driven.seen.length, 0)}`,
    `  cancels ${cancels.length} (running ${count(cancels.filter(({ cancel }) => cancel.moment === 'running'))}, waiting ${count(cancels.filter(({ cancel }) => cancel.moment === 'waiting'))}, after-end ${count(cancels.filter(({ cancel }) => cancel.moment === 'after-end'))}): runs ended cancelled ${cancelledEnds}`,
    `  kill -> the cut-off call runs again on another worker: ${percentiles(killLatencies)}`,
    `  stall past the lease -> the frozen call runs again on another worker: ${percentiles(stallLatencies)}`,
    `  violations: ${Object.keys(fleetInvariants)
      .map(
        (name) => `${name} ${figures.violations.filter((violation) => violation.invariant === name).length}`,
      )
      .join(', ')}`,
  ].join('\n');
}

function percentiles(latencies: number[]): string {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (p: number) =>
    (
      (sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ??
        Number.NaN) / 1000
    ).toFixed(2);
  return `p50 ${at(50)} s, p99 ${at(99)} s (${sorted.length} calls)`;
}

/**
 * For each call a worker had started and not finished when it was killed (or stopped): the time from then to
 * the call's next start on another worker.
 */
function rerunLatencies(
  starts: FleetExecution[],
  journal: FleetJournalLine[],
  cuts: ReadonlyArray<{ worker: string; at: number }>,
): number[] {
  const key = (line: FleetExecution) => `${line.worker}|${line.threadId}|${line.toolCallId}`;
  const ended = new Map<string, number>();
  for (const line of journal) {
    if (line.type !== 'execution-finish' && line.type !== 'execution-abort') continue;
    ended.set(key(line), Math.min(ended.get(key(line)) ?? Number.POSITIVE_INFINITY, line.at));
  }
  const latencies: number[] = [];
  for (const cut of cuts) {
    const open = starts.filter(
      (start) =>
        start.worker === cut.worker &&
        start.at <= cut.at &&
        (ended.get(key(start)) ?? Number.POSITIVE_INFINITY) > cut.at,
    );
    for (const start of open) {
      const again = starts.find(
        (line) =>
          line.worker !== cut.worker &&
          line.threadId === start.threadId &&
          line.toolCallId === start.toolCallId &&
          line.at > cut.at,
      );
      if (again) latencies.push(again.at - cut.at);
    }
  }
  return latencies;
}
