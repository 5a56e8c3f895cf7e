import type { ToolExecution } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import type { FleetExecution, FleetJournalLine } from '../../fixtures/fleet-journal.js';
import { checkExecutions } from './execution-checks.js';
import type { Disturbances, FleetInvariant, ThreadEvidence } from './fleet-invariants.js';
import type { DrivenRun } from './run-driver.js';
import { fenceAtTarget } from './target-fencing.js';

// The fleet test judges its invariants on the effects the target (the journal) accepted. These show that the
// target refuses only what a fenced target would — an effect with a lower token than one it already saw — and that
// a duplicate with the same or a higher token is still judged, and still a violation.

const call = 'p-s1-c1';

function line(
  type: FleetExecution['type'],
  worker: string,
  fencingToken: number,
  at: number,
  rerun = false,
): FleetExecution {
  return {
    type,
    worker,
    pid: worker === 'w1' ? 101 : 102,
    threadId: 't',
    runId: 'r',
    toolCallId: call,
    callId: call,
    idempotencyKey: `r:${call}`,
    rerun,
    fencingToken,
    at,
  };
}

function evidence(journal: FleetJournalLine[], recordedAt: number): ThreadEvidence {
  const driven = {
    threadId: 't',
    runId: 'r',
    plan: { label: 'p', steps: [[{ tool: 'work', durationMs: 400 }]] },
    approvedAt: new Map(),
  } as unknown as DrivenRun;
  const ledger = [{ toolCallId: call, completedAt: recordedAt } as ToolExecution];
  return {
    threadId: 't',
    runs: [{ driven, record: undefined, ledger, log: [] }],
    messages: [],
    journal,
    deadLetter: undefined,
  };
}

function violations(journal: FleetJournalLine[], recordedAt: number, disturbances: Disturbances) {
  const found: Array<{ invariant: FleetInvariant; detail: string }> = [];
  checkExecutions(evidence(journal, recordedAt), disturbances, (invariant, detail) =>
    found.push({ invariant, detail }),
  );
  return found;
}

/** w1 checked its lease at 1,000 ms, was stopped until 8,200 ms; w2 took the thread over meanwhile. */
const stalled: Disturbances = {
  kills: [],
  stalls: [{ worker: 'w1', pid: 101, start: 1_000, end: 8_200, long: true }],
};

describe('the fleet test reads its journal as a fenced target', () => {
  it("refuses a stalled holder's late effect with a lower token: it had no effect, so it is no violation", () => {
    const journal = [
      line('execution-start', 'w2', 2, 5_000, true),
      line('execution-finish', 'w2', 2, 5_400, true),
      // w1 goes on after SIGCONT and enters the tool it had checked its lease for, with its old token.
      line('execution-start', 'w1', 1, 8_200),
      line('execution-finish', 'w1', 1, 8_600),
    ];
    const target = fenceAtTarget(journal);
    expect(target.entries).toBe(2);
    expect(
      target.refused.map((stale) => `${stale.effect.worker} ${stale.effect.fencingToken}<${stale.seen}`),
    ).toEqual(['w1 1<2']);
    expect(target.accepted).toEqual(journal.slice(0, 2));
    expect(violations(target.accepted, 5_500, stalled)).toEqual([]);
    // Read raw, the same journal is a violation: the refusal is what makes it harmless, nothing else.
    expect(violations(journal, 5_500, stalled).map((found) => found.invariant)).toContain('recordedRerun');
  });

  it('accepts a duplicate with a higher token and still judges it: a recorded result run again is a violation', () => {
    const journal = [
      line('execution-start', 'w1', 2, 1_000),
      line('execution-finish', 'w1', 2, 1_400),
      line('execution-start', 'w2', 3, 3_000, true),
      line('execution-finish', 'w2', 3, 3_400, true),
    ];
    const target = fenceAtTarget(journal);
    expect(target.refused).toEqual([]);
    expect(target.accepted).toEqual(journal);
    const found = violations(target.accepted, 1_500, { kills: [], stalls: [] }).map((v) => v.invariant);
    expect(found).toContain('recordedRerun');
    expect(found).toContain('unjustifiedRerun');
  });

  it('accepts a duplicate with the same token and still judges it: two workers executing at once overlap', () => {
    const journal = [
      line('execution-start', 'w1', 2, 1_000),
      line('execution-start', 'w2', 2, 1_100, true),
      line('execution-finish', 'w1', 2, 1_400),
      line('execution-finish', 'w2', 2, 1_500, true),
    ];
    const target = fenceAtTarget(journal);
    expect(target.refused).toEqual([]);
    const found = violations(target.accepted, 1_600, { kills: [], stalls: [] }).map((v) => v.invariant);
    expect(found).toContain('overlap');
  });

  it('judges each thread on its own: a lower token on another thread is not stale', () => {
    const other = { ...line('execution-start', 'w1', 1, 2_000), threadId: 'u' };
    const target = fenceAtTarget([line('execution-start', 'w2', 5, 1_000), other]);
    expect(target.refused).toEqual([]);
    expect(target.accepted).toHaveLength(2);
  });
});
