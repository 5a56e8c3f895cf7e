import type {
  DeadLetter,
  Dispatcher,
  LunationStore,
  MessageRecord,
  RunEventRecord,
  RunRecord,
  ToolExecution,
} from '@lunation/contract';
import type { FleetJournalLine } from '../../fixtures/fleet-journal.js';
import { checkCancels } from './cancel-checks.js';
import { checkExecutions } from './execution-checks.js';
import { checkHistory } from './history-checks.js';
import { checkLogs } from './log-checks.js';
import type { DrivenRun } from './run-driver.js';
import type { WorkerKill, WorkerStall } from './worker-pool.js';

/**
 * The fleet's invariants (fleet.md): what the test checks from the store, the logs, the journal and the users.
 * Tool executions are judged on the effects the journal, their fenced target, accepted (see `fenceAtTarget`).
 */
export const fleetInvariants = {
  completed:
    'every submitted run ends: done with natural-end (or cancelled, when its user cancelled it); no thread dead-lettered',
  recordedRerun: 'no recorded result is executed again',
  unjustifiedRerun:
    'a call runs again only after the worker running it died, stalled or gave it up, with its key and rerun: true',
  unapproved: 'no gated call executes without its approval',
  overlap:
    "at most one worker executes a thread's tools at any instant; a stalled worker starts nothing on a thread taken over meanwhile",
  events: "every client sees each of its run's events exactly once, in order, across drops and fronts",
  logMatchesStore:
    "the log matches the store: each committed tool result has its tool-result event, each committed step one step-end, the log's run-end is the run record's",
  afterEnd:
    "a finished run takes nothing after its end: no event after its log's end mark, no tool started after it",
  duplicateMessage: 'no stored history holds a message twice',
  cancel:
    'a cancel ends its run (or finds it ended) and no other run; a gated call approved after the cancel never runs',
} as const;

export type FleetInvariant = keyof typeof fleetInvariants;

export interface FleetViolation {
  invariant: FleetInvariant;
  threadId: string;
  detail: string;
}

/** One run as its user saw it and as the store and its log keep it. */
export interface RunEvidence {
  driven: DrivenRun;
  record: RunRecord | undefined;
  ledger: ToolExecution[];
  log: RunEventRecord[];
}

/** Everything a thread left: its runs, its stored messages, its journal lines, its dead letter if any. */
export interface ThreadEvidence {
  threadId: string;
  runs: RunEvidence[];
  messages: MessageRecord[];
  /** The thread's executions and claims, in journal order. */
  journal: FleetJournalLine[];
  deadLetter: DeadLetter | undefined;
}

/** The test's disturbances of the workers, recorded by the pool. */
export interface Disturbances {
  kills: readonly WorkerKill[];
  stalls: readonly WorkerStall[];
}

export type Report = (invariant: FleetInvariant, detail: string) => void;

/** Reads a run's whole log, page by page. */
export async function readLog(dispatcher: Dispatcher, runId: string): Promise<RunEventRecord[]> {
  const records: RunEventRecord[] = [];
  for (;;) {
    const after = records.at(-1)?.id;
    const page = await dispatcher.readEvents(runId, after ? { after } : {});
    records.push(...page.events);
    if (page.events.length === 0) return records;
  }
}

export async function gatherEvidence(
  store: LunationStore,
  dispatcher: Dispatcher,
  driven: DrivenRun[],
  journal: FleetJournalLine[],
  deadLetters: DeadLetter[],
): Promise<ThreadEvidence> {
  const threadId = (driven[0] as DrivenRun).threadId;
  const runs = await Promise.all(
    driven.map(async (run) => ({
      driven: run,
      record: await store.getRun(run.runId),
      ledger: await store.listToolExecutions(run.runId),
      log: await readLog(dispatcher, run.runId),
    })),
  );
  return {
    threadId,
    runs,
    messages: await store.listMessages(threadId),
    journal: journal.filter((line) => 'threadId' in line && line.threadId === threadId),
    deadLetter: deadLetters.find((letter) => letter.threadId === threadId),
  };
}

/** Every violation of the fleet invariants by one thread. */
export function checkFleetThread(evidence: ThreadEvidence, disturbances: Disturbances): FleetViolation[] {
  const violations: FleetViolation[] = [];
  const report: Report = (invariant, detail) =>
    violations.push({ invariant, threadId: evidence.threadId, detail });
  checkCompleted(evidence, report);
  checkExecutions(evidence, disturbances, report);
  checkLogs(evidence, report);
  checkHistory(evidence, report);
  checkCancels(evidence, report);
  return violations;
}

function checkCompleted(evidence: ThreadEvidence, report: Report): void {
  for (const { driven, record } of evidence.runs) {
    const termination = record?.termination?.type;
    const ended = record?.status === 'done' && (termination === 'natural-end' || termination === 'cancelled');
    if (driven.error || !ended) {
      report(
        'completed',
        `run ${driven.runId} (${driven.plan.label}) is ${record?.status ?? 'missing'} (${termination ?? 'no termination'}${record?.termination?.type === 'error' ? `: ${record.termination.error.message}` : ''})${driven.error ? `; its user saw: ${driven.error}` : ''}`,
      );
    }
  }
  if (evidence.deadLetter) {
    const letter = evidence.deadLetter;
    report(
      'completed',
      `the thread was dead-lettered after ${letter.attempts} attempt(s): ${letter.error.code}: ${letter.error.message}`,
    );
  }
}
