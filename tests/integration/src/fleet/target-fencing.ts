import type { FleetExecution, FleetJournalLine } from '../../fixtures/fleet-journal.js';
import type { WorkerStall } from './worker-pool.js';

/** An effect the target refused: its token was lower than one the target had already seen for the thread. */
export interface StaleEffect {
  effect: FleetExecution;
  /** The highest token the target had seen for the thread when the effect arrived. */
  seen: number;
}

/** The journal as the effects' target saw it. */
export interface TargetView {
  /** Every line whose effect the target accepted (and every line that is no effect: claims, append failures). */
  accepted: FleetJournalLine[];
  /** Effects refused as stale, in the target's order. */
  refused: StaleEffect[];
  /** Tool entries (every start line, accepted or not). */
  entries: number;
}

/**
 * Reads the journal as the target of the tools' effects: a start line is an effect written with its call's fencing
 * token, and the journal's order (one O_APPEND file) is the order the target saw them in. Like a fenced store or
 * API, the target remembers the highest token it saw per thread and refuses a lower one: that effect had no
 * effect, so it and the lines of the same execution after it (its finish or abort) leave the accepted view. An
 * effect with the same or a higher token is accepted, whatever else it violates: the invariants judge it.
 */
export function fenceAtTarget(journal: readonly FleetJournalLine[]): TargetView {
  const highest = new Map<string, number>();
  /** Executions whose effect was refused, until their worker starts the call again. */
  const refusedExecutions = new Set<string>();
  const accepted: FleetJournalLine[] = [];
  const refused: StaleEffect[] = [];
  let entries = 0;
  for (const line of journal) {
    if (!isExecutionLine(line)) {
      accepted.push(line);
      continue;
    }
    const execution = executionKey(line);
    if (line.type !== 'execution-start') {
      if (!refusedExecutions.has(execution)) accepted.push(line);
      continue;
    }
    entries++;
    const seen = highest.get(line.threadId);
    if (line.fencingToken !== undefined && seen !== undefined && line.fencingToken < seen) {
      refused.push({ effect: line, seen });
      refusedExecutions.add(execution);
      continue;
    }
    refusedExecutions.delete(execution);
    if (line.fencingToken !== undefined) highest.set(line.threadId, Math.max(seen ?? 0, line.fencingToken));
    accepted.push(line);
  }
  return { accepted, refused, entries };
}

/** One refused effect for the summary: its worker, its call, its token and the stall that made it late. */
export function describeStaleEffect(stale: StaleEffect, stalls: readonly WorkerStall[]): string {
  const { effect, seen } = stale;
  const stall = stalls
    .filter((candidate) => candidate.worker === effect.worker && candidate.start <= effect.at + 1_000)
    .at(-1);
  const why =
    stall === undefined
      ? 'no stall of its worker recorded (a starved CPU?)'
      : `${stall.frozen ? 'froze' : 'stalled'} ${stall.end === undefined ? 'until the end' : `${stall.end - stall.start} ms`}, ${effect.at - stall.start} ms after the stall began`;
  return `${effect.worker} "${effect.toolCallId}" (run ${effect.runId}, token ${effect.fencingToken} < ${seen}): ${why}`;
}

function isExecutionLine(line: FleetJournalLine): line is FleetExecution {
  return line.type.startsWith('execution-');
}

function executionKey(line: FleetExecution): string {
  return `${line.pid}|${line.threadId}|${line.runId}|${line.toolCallId}`;
}
