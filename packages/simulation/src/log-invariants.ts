import type { AgentEvent, RunRecord } from '@lunation/contract';

/**
 * What a run's event log may say, given the store (the truth; the log is a view of it): nothing after a final
 * `run-end` (one that is not `waiting`: a waiting run's log goes on when it is resumed), and a final `run-end`
 * only for an ending the store has — the same status and the same kind of termination.
 */
export function logViolations(
  runId: string,
  events: readonly AgentEvent[],
  stored: RunRecord | undefined,
): string[] {
  const violations: string[] = [];
  let previous: AgentEvent | undefined;
  for (const event of events) {
    if (previous?.type === 'run-end' && previous.status !== 'waiting') {
      violations.push(`run ${runId}: ${event.type} after a ${previous.status} run-end in its log`);
    }
    if (previous !== undefined && event.seq !== 0 && event.seq !== previous.seq + 1) {
      violations.push(`run ${runId}: event seq ${event.seq} after ${previous.seq} in its log`);
    }
    previous = event;
  }
  if (previous?.type === 'run-end' && previous.status !== 'waiting') {
    const ending = `${previous.status}/${previous.termination.type}`;
    const truth = stored === undefined ? 'no run' : `${stored.status}/${stored.termination?.type ?? 'none'}`;
    if (ending !== truth) violations.push(`run ${runId}: its log ends ${ending}, the store has ${truth}`);
  }
  return violations;
}
