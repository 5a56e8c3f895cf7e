import type { RunEventRecord } from '@lunation/contract';
import type { FleetExecution } from '../../fixtures/fleet-journal.js';
import type { Report, RunEvidence, ThreadEvidence } from './fleet-invariants.js';

/**
 * Each run's log against its users and its store: the user saw the whole log once and in order; what the store
 * committed is in the log once; the log ends as the run record does and takes nothing after its end.
 */
export function checkLogs(evidence: ThreadEvidence, report: Report): void {
  for (const run of evidence.runs) {
    checkClientView(run, report);
    checkLogAgainstStore(run, evidence, report);
    checkAfterEnd(run, evidence, report);
  }
}

/** The user's events, across drops and reconnections, are the run's whole log: once each, in order. */
function checkClientView({ driven, log }: RunEvidence, report: Report): void {
  const seen = driven.seen.map((record) => record.id);
  const ids = new Set(seen);
  const label = driven.plan.label;
  if (ids.size !== seen.length)
    report('events', `${label}: the client saw ${seen.length - ids.size} event(s) twice`);
  for (let index = 1; index < seen.length; index++) {
    if (Number(seen[index]) <= Number(seen[index - 1])) {
      report('events', `${label}: event ${seen[index]} arrived after ${seen[index - 1]}`);
      break;
    }
  }
  if (driven.error) return; // a user that gave up saw a prefix
  // Up to the end mark: what a log takes after it is `afterEnd`'s, and no user can follow it.
  const end = log.findIndex((record) => record.event.type === 'run-end' && record.event.status === 'done');
  const logIds = (end < 0 ? log : log.slice(0, end + 1)).map((record) => record.id);
  if (seen.join(',') !== logIds.join(',')) {
    const missing = logIds.filter((id) => !ids.has(id));
    report(
      'events',
      `${label}: the client saw ${seen.length} events, the log has ${logIds.length}${missing.length > 0 ? `; missed ${missing.slice(0, 5).join(', ')}` : ''}`,
    );
  }
}

function checkLogAgainstStore(
  { driven, record, log }: RunEvidence,
  evidence: ThreadEvidence,
  report: Report,
): void {
  const label = `${driven.plan.label} (run ${driven.runId})`;
  const events = log.map((entry) => entry.event);
  const results = new Set(
    events.flatMap((event) => (event.type === 'tool-result' ? [event.toolCallId] : [])),
  );
  const committed = evidence.messages
    .filter((message) => message.runId === driven.runId && message.message.role === 'tool')
    .flatMap((message) =>
      message.message.content.flatMap((part) => (part.type === 'tool-result' ? [part] : [])),
    );
  const missing = committed.filter((part) => !results.has(part.toolCallId)).map((part) => part.toolCallId);
  if (missing.length > 0) {
    report(
      'logMatchesStore',
      `${label}: the store committed ${committed.length} tool result(s); the log has no tool-result for ${missing.join(', ')}`,
    );
  }
  // Each invocation of the run (from its `run-start`) ends a step at most once. A step that suspended ends in the
  // invocation that suspended it and again in the one that resumed it (its tools' results come then).
  const stepEnds = new Map<number, number>();
  const twice = new Set<number>();
  let invocation = new Set<number>();
  for (const event of events) {
    if (event.type === 'run-start') invocation = new Set();
    if (event.type !== 'step-end') continue;
    if (invocation.has(event.step)) twice.add(event.step);
    invocation.add(event.step);
    stepEnds.set(event.step, (stepEnds.get(event.step) ?? 0) + 1);
  }
  if (twice.size > 0)
    report(
      'logMatchesStore',
      `${label}: one invocation of the run ends step(s) ${[...twice].join(', ')} more than once`,
    );
  if (record && stepEnds.size < record.steps) {
    report(
      'logMatchesStore',
      `${label}: the store committed ${record.steps} step(s); the log has step-end for ${stepEnds.size} (${[...stepEnds.keys()].join(', ') || 'none'})`,
    );
  }
  const runEnd = events.filter((event) => event.type === 'run-end').at(-1);
  if (record && record.status !== 'running' && record.status !== 'created') {
    const expected = `${record.status}/${record.termination?.type}/${record.steps} steps`;
    const actual = runEnd
      ? `${runEnd.status}/${runEnd.termination.type}/${runEnd.steps} steps`
      : 'no run-end';
    if (expected !== actual)
      report('logMatchesStore', `${label}: the run record is ${expected}, the log's last run-end ${actual}`);
  }
}

/** No event after the log's end mark (its `run-end` with status `done`); no tool of the run started after its end. */
function checkAfterEnd({ driven, record, log }: RunEvidence, evidence: ThreadEvidence, report: Report): void {
  const label = `${driven.plan.label} (run ${driven.runId})`;
  const end = log.findIndex((entry) => entry.event.type === 'run-end' && entry.event.status === 'done');
  if (end >= 0 && end < log.length - 1) {
    const after: RunEventRecord[] = log.slice(end + 1);
    report(
      'afterEnd',
      `${label}: ${after.length} event(s) after its run-end (id ${log[end]?.id}): ${after
        .slice(0, 6)
        .map(
          (entry) => `${entry.event.type}${'toolCallId' in entry.event ? ` ${entry.event.toolCallId}` : ''}`,
        )
        .join(', ')}`,
    );
  }
  if (record?.status !== 'done') return;
  const late = evidence.journal.filter(
    (line): line is FleetExecution =>
      line.type === 'execution-start' && line.runId === driven.runId && line.at > record.updatedAt,
  );
  for (const start of late) {
    report(
      'afterEnd',
      `${label}: "${start.toolCallId}" started in ${start.worker} ${start.at - record.updatedAt} ms after the run ended (${record.termination?.type})`,
    );
  }
}
