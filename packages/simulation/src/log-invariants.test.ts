import type { AgentEvent, RunEventRecord, RunRecord } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { type EventLogView, logViolations, RunLogChecks } from './log-invariants.js';

let nextId = 0;
const record = (seq: number, event: Partial<AgentEvent> = {}): RunEventRecord =>
  ({ id: String(++nextId), event: { type: 'text-delta', seq, ...event } }) as RunEventRecord;
const runEnd = (seq: number) =>
  record(seq, {
    type: 'run-end',
    status: 'done',
    termination: { type: 'natural-end' },
  } as Partial<AgentEvent>);

/** Logs by run id, changed in place as the simulated dispatcher changes its own. */
function logs() {
  const byRun = new Map<string, { records: RunEventRecord[]; ended: boolean }>();
  return {
    byRun,
    checks: new RunLogChecks({ eventLog: (runId: string): EventLogView | undefined => byRun.get(runId) }),
  };
}

describe('RunLogChecks', () => {
  it('reads only what was appended since its last reading', () => {
    const { byRun, checks } = logs();
    const log = { records: [record(1), record(2)], ended: false };
    byRun.set('r1', log);
    expect(checks.read('r1').from).toBe(0);
    log.records.push(record(3));
    const reading = checks.read('r1');
    expect([reading.from, reading.records.length, reading.ended]).toEqual([2, 3, false]);
    expect(checks.read('r1').from).toBe(3);
  });

  it('reads a log whole again when it was replaced, cut at its front, gone or forgotten', () => {
    const { byRun, checks } = logs();
    const log = { records: [record(1), record(2), record(3)], ended: false };
    byRun.set('r1', log);
    checks.read('r1');
    log.records.splice(0, 1);
    log.records.push(record(4));
    expect(checks.read('r1').from).toBe(0);
    byRun.set('r1', { records: [...log.records, record(5)], ended: true });
    expect(checks.read('r1')).toMatchObject({ from: 0, ended: true });
    byRun.delete('r1');
    expect(checks.read('r1')).toMatchObject({ from: 0, records: [], ended: false });
    byRun.set('r1', log);
    checks.read('r1');
    checks.forget('r1');
    expect(checks.read('r1').from).toBe(0);
  });
});

describe('logViolations on an incremental reading', () => {
  const done = { status: 'done', termination: { type: 'natural-end' } } as RunRecord;

  it('checks the first new record against the last one read before', () => {
    const { byRun, checks } = logs();
    const log = { records: [record(1), record(2)], ended: false };
    byRun.set('r1', log);
    expect(logViolations('r1', checks.read('r1'), done)).toEqual([]);
    log.records.push(record(4));
    expect(logViolations('r1', checks.read('r1'), done)).toEqual(['run r1: event seq 4 after 2 in its log']);
    expect(logViolations('r1', checks.read('r1'), done)).toEqual([]);
  });

  it("compares the log's end with the store at every reading, new records or not", () => {
    const { byRun, checks } = logs();
    byRun.set('r1', { records: [record(1), runEnd(2)], ended: true });
    expect(logViolations('r1', checks.read('r1'), done)).toEqual([]);
    const running = { status: 'running' } as RunRecord;
    expect(logViolations('r1', checks.read('r1'), running)).toEqual([
      'run r1: its log ends done/natural-end, the store has running/none',
    ]);
    expect(logViolations('r1', checks.read('r1'), undefined)).toEqual([
      'run r1: its log ends done/natural-end, the store has no run',
    ]);
  });

  it('finds an event after a final run-end across two readings', () => {
    const { byRun, checks } = logs();
    const log = { records: [record(1), runEnd(2)], ended: false };
    byRun.set('r1', log);
    expect(logViolations('r1', checks.read('r1'), { ...done })).toEqual([]);
    log.records.push(record(3));
    expect(logViolations('r1', checks.read('r1'), done)).toEqual([
      'run r1: text-delta after a done run-end in its log',
    ]);
  });
});
