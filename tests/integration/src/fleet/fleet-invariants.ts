import type { LunationStore, RunEventRecord, ToolExecution } from '@lunation/contract';
import type { FleetExecution } from '../../fixtures/fleet-agent.js';
import type { DrivenRun } from './run-driver.js';
import type { WorkerKill } from './worker-pool.js';

/** The fleet's invariants (fleet.md): what the test checks from the store, the journal and the clients. */
export const fleetInvariants = {
  completed: 'every submitted run completes',
  recordedRerun: 'no recorded result is executed again',
  unjustifiedRerun: 'a call runs again only after the worker running it died, with its key and rerun: true',
  unapproved: 'no gated call executes without its approval',
  overlap: 'at most one worker executes a thread at any instant',
  events: "every client sees each of its run's events exactly once, in order",
} as const;

export type FleetInvariant = keyof typeof fleetInvariants;

export interface FleetViolation {
  invariant: FleetInvariant;
  threadId: string;
  detail: string;
}

/** What one run left: the user's view, the store's run and ledger, its journal lines, the full event log. */
export interface FleetRunEvidence {
  driven: DrivenRun;
  status: string | undefined;
  termination: string | undefined;
  ledger: ToolExecution[];
  executions: FleetExecution[];
  log: RunEventRecord[];
}

export async function gatherEvidence(
  store: LunationStore,
  driven: DrivenRun,
  journal: FleetExecution[],
  readLog: (runId: string) => Promise<RunEventRecord[]>,
): Promise<FleetRunEvidence> {
  const run = await store.getRun(driven.runId);
  return {
    driven,
    status: run?.status,
    termination: run?.termination?.type,
    ledger: await store.listToolExecutions(driven.runId),
    executions: journal.filter((line) => line.threadId === driven.threadId),
    log: await readLog(driven.runId),
  };
}

/** Every violation of the fleet invariants by one run, given the workers the test killed. */
export function checkFleetRun(evidence: FleetRunEvidence, kills: readonly WorkerKill[]): FleetViolation[] {
  const violations: FleetViolation[] = [];
  const { driven } = evidence;
  const add = (invariant: FleetInvariant, detail: string) =>
    violations.push({ invariant, threadId: driven.threadId, detail });
  const killedAt = new Map(kills.map((kill) => [kill.worker, kill.at]));

  if (driven.error || evidence.status !== 'done' || evidence.termination !== 'natural-end') {
    add(
      'completed',
      `run ${driven.runId} is ${evidence.status ?? 'missing'} (${evidence.termination ?? 'no termination'})${driven.error ? `; the user saw: ${driven.error}` : ''}`,
    );
  }

  const byCall = new Map<string, FleetExecution[]>();
  for (const line of evidence.executions) {
    byCall.set(line.toolCallId, [...(byCall.get(line.toolCallId) ?? []), line]);
  }
  for (const [toolCallId, lines] of byCall) {
    const starts = lines.filter((line) => line.type === 'execution-start');
    if (toolOf(driven, toolCallId) === 'ask') {
      const approved = driven.approvedAt.get(toolCallId);
      for (const start of starts) {
        if (approved === undefined || start.at < approved) {
          add('unapproved', `"${toolCallId}" started in ${start.worker} before it was approved`);
        }
      }
    }
    for (let index = 1; index < starts.length; index++) {
      const previous = starts[index - 1] as FleetExecution;
      const attempt = starts[index] as FleetExecution;
      const died = killedAt.get(previous.worker);
      if (died === undefined || died < previous.at || died > attempt.at) {
        add(
          'unjustifiedRerun',
          `"${toolCallId}" ran again in ${attempt.worker} although ${previous.worker}, which ran it before, was alive`,
        );
      }
      if (!attempt.rerun || attempt.idempotencyKey !== previous.idempotencyKey) {
        add('unjustifiedRerun', `"${toolCallId}" ran again without rerun: true and its key`);
      }
    }
    // The ledger keys calls by the runtime's id.
    const callId = starts[0]?.callId;
    const recorded = evidence.ledger.find((entry) => entry.toolCallId === callId)?.completedAt;
    const late = starts.find((start) => recorded !== undefined && start.at > recorded);
    if (late)
      add('recordedRerun', `"${toolCallId}" ran again in ${late.worker} after its result was recorded`);
  }
  checkOverlaps(evidence, killedAt, add);
  checkEvents(evidence, add);
  return violations;
}

function toolOf(driven: DrivenRun, toolCallId: string): string | undefined {
  const match = /-s(\d+)-c(\d+)$/.exec(toolCallId);
  if (!match) return undefined;
  return driven.plan.steps[Number(match[1]) - 1]?.[Number(match[2]) - 1]?.tool;
}

/** Two workers executing the thread's tools at once, the earlier one alive: both held the thread. */
function checkOverlaps(
  evidence: FleetRunEvidence,
  killedAt: Map<string, number>,
  add: (invariant: FleetInvariant, detail: string) => void,
): void {
  const open = new Map<string, FleetExecution[]>();
  for (const line of [...evidence.executions].sort((a, b) => a.at - b.at)) {
    if (line.type === 'execution-finish') {
      open.set(
        line.worker,
        (open.get(line.worker) ?? []).filter((start) => start.toolCallId !== line.toolCallId),
      );
      continue;
    }
    for (const [worker, starts] of open) {
      const died = killedAt.get(worker);
      if (worker === line.worker || starts.length === 0 || (died !== undefined && died <= line.at)) continue;
      add(
        'overlap',
        `"${line.toolCallId}" started in ${line.worker} while ${worker} was executing "${starts[0]?.toolCallId}"`,
      );
    }
    open.set(line.worker, [...(open.get(line.worker) ?? []), line]);
  }
}

/** The user's events, across drops and reconnections, are the run's whole log: once each, in order. */
function checkEvents(
  evidence: FleetRunEvidence,
  add: (invariant: FleetInvariant, detail: string) => void,
): void {
  const seen = evidence.driven.seen.map((record) => record.id);
  const log = evidence.log.map((record) => record.id);
  const ids = new Set(seen);
  if (ids.size !== seen.length) add('events', `the client saw ${seen.length - ids.size} event(s) twice`);
  for (let index = 1; index < seen.length; index++) {
    if (Number(seen[index]) <= Number(seen[index - 1])) {
      add('events', `event ${seen[index]} arrived after ${seen[index - 1]}`);
      break;
    }
  }
  if (seen.join(',') !== log.join(',')) {
    const missing = log.filter((id) => !ids.has(id));
    add(
      'events',
      `the client saw ${seen.length} events, the log has ${log.length}; missed ${missing.slice(0, 5).join(', ')}`,
    );
  }
}
