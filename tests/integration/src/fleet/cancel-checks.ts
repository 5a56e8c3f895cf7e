import type { FleetExecution } from '../../fixtures/fleet-journal.js';
import type { Report, ThreadEvidence } from './fleet-invariants.js';

/**
 * What a cancel (naming its run, through the front the run was not submitted on) may do, and what it must:
 * - The request is answered (durable) or fails loudly.
 * - Only a run a cancel named ends `cancelled`: a cancel never outlives its run to stop the thread's next one.
 * - A run its user approved calls of after the cancel was answered ends `cancelled`, and those calls never run:
 *   the cancel was durable before the approval was submitted, so whichever worker applies the approval sees it.
 * - A cancelled run ends (`done`); `natural-end` is allowed only when it raced the cancel: a tool call that
 *   started before the cancel may finish, and a run in its last step may end before the worker hears of it.
 */
export function checkCancels(evidence: ThreadEvidence, report: Report): void {
  const starts = evidence.journal.filter((line): line is FleetExecution => line.type === 'execution-start');
  for (const [index, run] of evidence.runs.entries()) {
    const { driven, record } = run;
    const label = `${driven.plan.label} (run ${driven.runId})`;
    const answered = driven.cancels.filter((cancel) => cancel.error === undefined);
    for (const cancel of driven.cancels) {
      if (cancel.error) report('cancel', `${label}: the ${cancel.moment} cancel failed: ${cancel.error}`);
    }
    if (record?.termination?.type === 'cancelled' && answered.length === 0) {
      const earlier = evidence.runs
        .slice(0, index)
        .filter((other) => other.driven.cancels.length > 0)
        .map(
          (other) =>
            `${other.driven.plan.label}'s ${other.driven.cancels.map((cancel) => cancel.moment).join('/')} cancel`,
        );
      report(
        'cancel',
        `${label} ended cancelled though nobody cancelled it${earlier.length > 0 ? `: ${earlier.join(', ')} outlived its run` : ''}`,
      );
    }
    if (answered.length === 0) continue;
    const firstAnswer = Math.min(...answered.map((cancel) => cancel.answeredAt));
    const approvedAfter = [...driven.approvedAt]
      .filter(([, at]) => at > firstAnswer)
      .map(([toolCallId]) => toolCallId);
    if (approvedAfter.length > 0 && record?.termination?.type !== 'cancelled') {
      report(
        'cancel',
        `${label}: cancelled (${answered[0]?.moment}) before ${approvedAfter.join(', ')} ${approvedAfter.length === 1 ? 'was' : 'were'} approved, yet it ended ${record?.status ?? 'missing'} (${record?.termination?.type ?? 'no termination'})`,
      );
    }
    for (const toolCallId of approvedAfter) {
      const ran = starts.find((start) => start.runId === driven.runId && start.toolCallId === toolCallId);
      if (ran) {
        report(
          'cancel',
          `${label}: "${toolCallId}" ran in ${ran.worker} ${ran.at - firstAnswer} ms after the cancel was answered; it was approved only after the cancel`,
        );
      }
    }
    if (record?.status !== 'done') {
      report('cancel', `${label}: cancelled, yet the store says ${record?.status ?? 'missing'}`);
    }
  }
}
