import type { RunEventRecord, RunRecord } from '@lunation/contract';

/** A run's event log as it is: its records, oldest first, and whether it is ended. */
export interface EventLogView {
  readonly records: readonly RunEventRecord[];
  readonly ended: boolean;
}

/** Where the reading of a run's event log stopped: the log then, its first record, how many records were read. */
interface LogCursor {
  log: EventLogView;
  first: RunEventRecord;
  read: number;
}

/** What {@link RunLogChecks.read} found in a log: its records, and from which one on they were not read before. */
export interface LogReading {
  records: readonly RunEventRecord[];
  /** The index of the first record not read before (0 when the log is new, replaced or cut at its front). */
  from: number;
  /** True when the log is ended. */
  ended: boolean;
}

/** Where the checks find each run's event log (the simulated dispatcher's backend). */
export interface EventLogs {
  eventLog(runId: string): EventLogView | undefined;
}

const noRecords: readonly RunEventRecord[] = [];

/**
 * Reads each run's event log incrementally: a log only grows at its end (its records never change), so only the
 * records appended since the last reading are new; a log found replaced (expired and made again) or cut at its
 * front (its first record is another) is read whole again. {@link forget} makes the next reading whole.
 */
export class RunLogChecks {
  private readonly cursors = new Map<string, LogCursor>();

  constructor(private readonly logs: EventLogs) {}

  /** What the log of `runId` holds now, and which of its records were not read before. */
  read(runId: string): LogReading {
    const log = this.logs.eventLog(runId);
    const first = log?.records[0];
    if (log === undefined || first === undefined) {
      this.cursors.delete(runId);
      return { records: noRecords, from: 0, ended: log?.ended ?? false };
    }
    const cursor = this.cursors.get(runId);
    const resumed = cursor?.log === log && cursor.first === first && cursor.read <= log.records.length;
    const from = resumed ? cursor.read : 0;
    if (resumed) cursor.read = log.records.length;
    else this.cursors.set(runId, { log, first, read: log.records.length });
    return { records: log.records, from, ended: log.ended };
  }

  /** Reads the log of `runId` whole next time (its checks were paused: what was appended meanwhile is unread). */
  forget(runId: string): void {
    this.cursors.delete(runId);
  }
}

/**
 * What a run's event log may say, given the store (the truth; the log is a view of it): nothing after a final
 * `run-end` (one that is not `waiting`: a waiting run's log goes on when it is resumed), and a final `run-end`
 * only for an ending the store has — the same status and the same kind of termination. Checks the records of
 * `reading` not read before against their predecessors, and the log's last event against the store.
 */
export function logViolations(runId: string, reading: LogReading, stored: RunRecord | undefined): string[] {
  const violations: string[] = [];
  const { records, from } = reading;
  let previous = records[from - 1]?.event;
  for (let index = from; index < records.length; index++) {
    const { event } = records[index] as RunEventRecord;
    if (previous?.type === 'run-end' && previous.status !== 'waiting') {
      violations.push(`run ${runId}: ${event.type} after a ${previous.status} run-end in its log`);
    }
    if (previous !== undefined && event.seq !== 0 && event.seq !== previous.seq + 1) {
      violations.push(`run ${runId}: event seq ${event.seq} after ${previous.seq} in its log`);
    }
    previous = event;
  }
  const last = records.at(-1)?.event;
  if (last?.type === 'run-end' && last.status !== 'waiting') {
    const truthStatus = stored?.status;
    const truthType = stored?.termination?.type ?? 'none';
    if (last.status !== truthStatus || last.termination.type !== truthType) {
      const truth = stored === undefined ? 'no run' : `${truthStatus}/${truthType}`;
      violations.push(
        `run ${runId}: its log ends ${last.status}/${last.termination.type}, the store has ${truth}`,
      );
    }
  }
  return violations;
}
