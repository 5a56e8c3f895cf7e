import type { FleetClaim, FleetExecution } from '../../fixtures/fleet-journal.js';
import type { Disturbances, Report, ThreadEvidence } from './fleet-invariants.js';
import type { DrivenRun } from './run-driver.js';
import type { WorkerStall } from './worker-pool.js';

/**
 * The thread's tool executions, from the journal: no recorded result runs again, a call runs again only when the
 * worker that ran it died, stalled or gave it up (and then with its key and `rerun: true`), no gated call runs
 * before its approval, and two workers never run the thread's tools at once.
 */
export function checkExecutions(evidence: ThreadEvidence, disturbances: Disturbances, report: Report): void {
  // In the order they happened: a worker stopped between reading the clock and writing its line (SIGSTOP) writes
  // it late, after lines of later executions of other workers.
  const executions = evidence.journal
    .filter((line): line is FleetExecution => line.type.startsWith('execution-'))
    .sort((first, second) => first.at - second.at);
  const claims = evidence.journal.filter((line): line is FleetClaim => line.type === 'claim');
  const killedAt = new Map(disturbances.kills.map((kill) => [kill.worker, kill.at]));
  const stallsOf = (worker: string) => disturbances.stalls.filter((stall) => stall.worker === worker);
  const starts = executions.filter((line) => line.type === 'execution-start');

  for (const run of evidence.runs) {
    const byCall = new Map<string, FleetExecution[]>();
    for (const line of starts.filter((start) => start.runId === run.driven.runId)) {
      byCall.set(line.toolCallId, [...(byCall.get(line.toolCallId) ?? []), line]);
    }
    for (const [toolCallId, attempts] of byCall) {
      if (toolOf(run.driven, toolCallId) === 'ask') {
        const approved = run.driven.approvedAt.get(toolCallId);
        for (const start of attempts) {
          if (approved === undefined || start.at < approved) {
            report('unapproved', `"${toolCallId}" started in ${start.worker} before it was approved`);
          }
        }
      }
      for (let index = 1; index < attempts.length; index++) {
        const previous = attempts[index - 1] as FleetExecution;
        const attempt = attempts[index] as FleetExecution;
        const died = killedAt.get(previous.worker);
        const killed = died !== undefined && died >= previous.at && died <= attempt.at;
        const stalled = stallsOf(previous.worker).some(
          (stall) => stall.start <= attempt.at && (stall.end ?? Number.POSITIVE_INFINITY) >= previous.at,
        );
        const gaveUp = executions.some(
          (line) =>
            line.type === 'execution-abort' &&
            line.worker === previous.worker &&
            line.toolCallId === toolCallId &&
            line.at >= previous.at &&
            line.at <= attempt.at,
        );
        if (!killed && !stalled && !gaveUp) {
          report(
            'unjustifiedRerun',
            `"${toolCallId}" ran again in ${attempt.worker} although ${previous.worker}, which ran it before, neither died, stalled nor gave it up`,
          );
        }
        if (!attempt.rerun || attempt.idempotencyKey !== previous.idempotencyKey) {
          report(
            'unjustifiedRerun',
            `"${toolCallId}" ran again in ${attempt.worker} with rerun: ${attempt.rerun} and ${attempt.idempotencyKey === previous.idempotencyKey ? 'its key' : `another key (${attempt.idempotencyKey}, was ${previous.idempotencyKey})`}`,
          );
        }
      }
      // The ledger keys calls by the runtime's id.
      const callId = attempts[0]?.callId;
      const recorded = run.ledger.find((entry) => entry.toolCallId === callId)?.completedAt;
      const late = attempts.find((start) => recorded !== undefined && start.at > recorded);
      if (late) {
        report(
          'recordedRerun',
          `"${toolCallId}" ran again in ${late.worker} ${late.at - (recorded as number)} ms after its result was recorded`,
        );
      }
    }
  }
  checkOverlaps(executions, killedAt, stallsOf, report);
  checkTakeOvers(starts, claims, stallsOf, report);
}

function toolOf(driven: DrivenRun, toolCallId: string): string | undefined {
  const match = /-s(\d+)-c(\d+)$/.exec(toolCallId);
  if (!match) return undefined;
  return driven.plan.steps[Number(match[1]) - 1]?.[Number(match[2]) - 1]?.tool;
}

/**
 * A tool of the thread starting while another worker is executing one: that worker was running (neither dead nor
 * stopped), so both held the thread. An execution open across its worker's stall does not count after the stall
 * began: the worker could not stop it while it was stopped, and the thread's next holder rightly went on.
 */
function checkOverlaps(
  executions: FleetExecution[],
  killedAt: Map<string, number>,
  stallsOf: (worker: string) => WorkerStall[],
  report: Report,
): void {
  const open = new Map<string, FleetExecution[]>();
  for (const line of [...executions].sort((a, b) => a.at - b.at)) {
    if (line.type !== 'execution-start') {
      open.set(
        line.worker,
        (open.get(line.worker) ?? []).filter((start) => start.toolCallId !== line.toolCallId),
      );
      continue;
    }
    for (const [worker, starts] of open) {
      const died = killedAt.get(worker);
      if (worker === line.worker || (died !== undefined && died <= line.at)) continue;
      const stalls = stallsOf(worker);
      if (
        stalls.some((stall) => stall.start <= line.at && (stall.end ?? Number.POSITIVE_INFINITY) >= line.at)
      )
        continue;
      const live = starts.filter(
        (start) => !stalls.some((stall) => start.at <= stall.start && stall.start <= line.at),
      );
      if (live.length === 0) continue;
      report(
        'overlap',
        `"${line.toolCallId}" started in ${line.worker} while ${worker} was executing "${live[0]?.toolCallId}" (since ${line.at - (live[0] as FleetExecution).at} ms)`,
      );
    }
    open.set(line.worker, [...(open.get(line.worker) ?? []), line]);
  }
}

/**
 * A stalled worker that resumes must not go on with a run another worker took over while it was stopped: if it
 * had started one of the run's tools before the stall and another worker started one of them during the stall,
 * the stalled one starts none of the run's tools afterwards until the dispatcher hands it the thread again (a
 * claim journaled after the take-over).
 */
function checkTakeOvers(
  starts: FleetExecution[],
  claims: FleetClaim[],
  stallsOf: (worker: string) => WorkerStall[],
  report: Report,
): void {
  const workers = new Set(starts.map((start) => start.worker));
  for (const worker of workers) {
    for (const stall of stallsOf(worker)) {
      const end = stall.end;
      if (end === undefined) continue;
      const before = starts.filter((start) => start.worker === worker && start.at <= stall.start).at(-1);
      if (!before) continue;
      const takeOver = starts.find(
        (start) =>
          start.worker !== worker &&
          start.runId === before.runId &&
          start.at >= stall.start &&
          start.at <= end,
      );
      // A stopped worker writes nothing: its lines after the stall began are from after it resumed (the test
      // may note the SIGCONT later than the worker's first line, on a starved machine).
      const resumed = starts.find(
        (start) => start.worker === worker && start.runId === before.runId && start.at > stall.start,
      );
      if (!takeOver || !resumed) continue;
      const claimedAgain = claims.some(
        (claim) => claim.worker === worker && claim.at > takeOver.at && claim.at <= resumed.at,
      );
      if (claimedAgain) continue;
      report(
        'overlap',
        `${worker} ${stall.frozen ? 'froze' : 'stalled'} ${end - stall.start} ms (${stall.long ? 'past' : 'within'} the lease) in run ${before.runId}, resumed and started "${resumed.toolCallId}" ${resumed.at - stall.start} ms after the stall began although ${takeOver.worker} had taken the run over ("${takeOver.toolCallId}" ${takeOver.at - stall.start} ms into the stall) and it was not given the thread again`,
      );
    }
  }
}
