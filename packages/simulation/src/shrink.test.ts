import { describe, expect, it } from 'vitest';
import { faultProfiles } from './fault-profiles.js';
import { runInboxWorld } from './inbox-world.js';
import { failureKind, shrinkFaults } from './shrink.js';

// The inbox world with a planted defect (a submission applied without looking whether it already was) fails under
// faults; shrinking keeps only the faults the failure needs, and the shrunk schedule replays it exactly.
const stormy = { ...faultProfiles.all.inbox, mutation: 'skip-applied-check' as const, maxVirtualMs: 60_000 };

describe('shrinking a failing seed to a shorter fault schedule', () => {
  it('keeps fewer faults that still fail the same way, and `keepFaults` replays them exactly', async () => {
    let seed = 0;
    let full = await runInboxWorld({ seed, ...stormy });
    while (full.violations.length === 0 && seed < 40) full = await runInboxWorld({ seed: ++seed, ...stormy });
    expect(full.violations.length, 'a failing seed within 40').toBeGreaterThan(0);

    const shrunk = await shrinkFaults((keep) =>
      runInboxWorld({ seed, ...stormy, ...(keep ? { keepFaults: keep } : {}) }),
    );
    expect(shrunk.from).toBe(full.injected.length);
    expect(shrunk.faults.length).toBeLessThan(full.injected.length);
    expect(failureKind(shrunk.report.violations[0] ?? '')).toBe(failureKind(full.violations[0] ?? ''));

    const keep = new Set(shrunk.faults.map((fault) => fault.ordinal));
    const replayed = await runInboxWorld({ seed, ...stormy, keepFaults: keep, keepTrace: true });
    const again = await runInboxWorld({ seed, ...stormy, keepFaults: keep, keepTrace: true });
    expect(replayed.injected).toEqual(shrunk.faults);
    expect(replayed.violations).toEqual(shrunk.report.violations);
    expect(again.traceHash).toBe(replayed.traceHash);
  }, 300_000);

  it('turns off exactly the faults not kept: with none kept, the seed runs without a fault', async () => {
    const report = await runInboxWorld({ seed: 3, ...faultProfiles.all.inbox, keepFaults: new Set() });
    const calm = await runInboxWorld({ seed: 3, ...faultProfiles.all.inbox });
    expect(report.injected).toEqual([]);
    expect(report.faults).toEqual({});
    expect(calm.injected.length).toBeGreaterThan(0);
    expect(report.violations).toEqual([]);
  }, 120_000);
});
