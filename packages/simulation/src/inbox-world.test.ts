import { describe, expect, it } from 'vitest';
import { type InboxWorldOptions, runInboxWorld } from './inbox-world.js';

/** Every fault the store and dispatcher can inject, and crashes, at rates that make each seed see several. */
const stormy: Omit<InboxWorldOptions, 'seed'> = {
  crashRate: 0.05,
  storeFaults: {
    lostWrite: 0.02,
    unacknowledgedWrite: 0.02,
    unavailable: 0.02,
    busy: 0.02,
    conflict: 0.02,
    late: 0.05,
  },
  dispatchFaults: { duplicateDelivery: 0.1, lostClaim: 0.05, lostAcknowledgement: 0.05, late: 0.05 },
};

const seeds = (count: number, from = 1) => Array.from({ length: count }, (_, index) => from + index);

describe('the inbox world', () => {
  it('gives the same trace, byte for byte, for the same seed (a sample of seeds, each run twice)', async () => {
    const hashes = new Set<string | undefined>();
    for (const seed of seeds(25)) {
      const first = await runInboxWorld({ seed, ...stormy, keepTrace: true });
      const second = await runInboxWorld({ seed, ...stormy, keepTrace: true });
      expect(second.traceHash, `seed ${seed}`).toBe(first.traceHash);
      expect(second.trace).toEqual(first.trace);
      expect(second.faults).toEqual(first.faults);
      hashes.add(first.traceHash);
    }
    expect(hashes.size).toBe(25);
  }, 120_000);

  it('keeps its invariants and applies every submission once, without faults and under every fault', async () => {
    let faults = 0;
    for (const seed of seeds(100)) {
      const calm = await runInboxWorld({ seed });
      expect(calm.violations, `seed ${seed} without faults`).toEqual([]);
      expect(calm.effects).toBe(12);
      const report = await runInboxWorld({ seed, ...stormy });
      expect(report.violations, `seed ${seed} with faults`).toEqual([]);
      expect(report.effects).toBeLessThanOrEqual(12);
      faults += Object.values(report.faults).reduce((sum, count) => sum + count, 0);
    }
    expect(faults).toBeGreaterThan(500);
  }, 300_000);

  it.each([
    ['skip-applied-check', 'applied 2 times'],
    ['early-acknowledge', 'never applied'],
  ] as const)(
    'finds the planted defect %s within 20 seeds',
    async (mutation, symptom) => {
      const found: number[] = [];
      for (const seed of seeds(20)) {
        const report = await runInboxWorld({ seed, ...stormy, mutation, maxVirtualMs: 60_000 });
        if (report.violations.length > 0) {
          expect(report.violations[0]).toContain(symptom);
          found.push(seed);
        }
      }
      expect(found.length).toBeGreaterThan(0);
    },
    120_000,
  );
});
