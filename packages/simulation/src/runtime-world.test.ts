import { describe, expect, it } from 'vitest';
import { faultProfiles } from './fault-profiles.js';
import { runRuntimeWorld } from './runtime-world.js';

describe('the runtime world (AgentWorkers over the simulated store and dispatcher)', () => {
  it('runs every submitted run to done, with each charge made once, without faults', async () => {
    for (const seed of [1, 2, 3]) {
      const report = await runRuntimeWorld({ seed });
      expect(report.violations, `seed ${seed}`).toEqual([]);
      expect(report.effects, `seed ${seed}`).toBe(4);
    }
  }, 120_000);

  it('gives the same trace for the same seed, with crashes and every fault (a sample of seeds, each run twice)', async () => {
    const hashes = new Set<string>();
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const first = await runRuntimeWorld({ seed, ...faultProfiles.all.runtime, keepTrace: true });
      const second = await runRuntimeWorld({ seed, ...faultProfiles.all.runtime, keepTrace: true });
      expect(second.trace, `seed ${seed}`).toEqual(first.trace);
      expect(second.traceHash).toBe(first.traceHash);
      expect(first.violations, `seed ${seed}`).toEqual([]);
      hashes.add(first.traceHash);
    }
    expect(hashes.size).toBe(6);
  }, 120_000);
});
