import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScratchCheckout, simulate } from './campaign.js';
import { applyMutation, checkMutations, type Mutation } from './mutation.js';
import { mutations } from './mutations.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');

/**
 * The simulator must be able to fail: a few of the campaign's fastest-found mutations, each to be found within
 * the seed budget the campaign recorded for it (`mutation-campaign.md`; twice the seed that found it, so a change
 * of the world that makes it much harder to find fails here).
 */
const ciMutants: ReadonlyArray<{ name: string; budget: number }> = [
  { name: 'acknowledge-before-commit', budget: 4 }, // found at seed 2
  { name: 'run-end-announced-though-commit-failed', budget: 70 }, // found at seed 35 (9 before fronts created threads)
  { name: 'ledger-lookup-skipped', budget: 20 }, // found at seed 10
];

describe('the mutation campaign', () => {
  it('has every mutation applying: each search text occurs exactly once in its file', () => {
    expect(() => checkMutations(repoRoot, mutations)).not.toThrow();
    expect(mutations.length).toBeGreaterThanOrEqual(10);
  });

  it('fails loudly when a search text is gone, and restores the file it mutated', () => {
    const root = mkdtempSync(join(tmpdir(), 'lunation-mutation-'));
    try {
      writeFileSync(join(root, 'a.ts'), 'const fenced = check(lease);\n');
      const gone: Mutation = {
        name: 'gone',
        description: 'a text that moved',
        origin: 'test',
        file: 'a.ts',
        search: 'check(token)',
        replace: 'true',
      };
      expect(() => applyMutation(root, gone)).toThrow(/occurs 0 times in a\.ts/);
      expect(() => checkMutations(root, [gone])).toThrow(/gone: search text found 0 times/);
      const found = { ...gone, search: 'check(lease)' };
      const applied = applyMutation(root, found);
      expect(readFileSync(join(root, 'a.ts'), 'utf8')).toBe('const fenced = true;\n');
      applied.restore();
      expect(readFileSync(join(root, 'a.ts'), 'utf8')).toBe('const fenced = check(lease);\n');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  describe('finds planted defects within their recorded seed budgets', () => {
    let scratch: ScratchCheckout;
    beforeAll(() => {
      scratch = ScratchCheckout.create(repoRoot);
    });
    afterAll(() => scratch?.dispose());

    it('finds nothing in the code as it is, over the largest budget (the control)', async () => {
      const maxSeeds = Math.max(...ciMutants.map(({ budget }) => budget));
      const result = await simulate(scratch.root, { world: 'runtime', faults: 'all', maxSeeds });
      expect(result).toEqual({ seedsRun: maxSeeds });
    }, 120_000);

    it.each(ciMutants)(
      '$name within $budget seeds',
      async ({ name, budget }) => {
        const mutation = mutations.find((candidate) => candidate.name === name);
        expect(mutation, name).toBeDefined();
        const result = await scratch.run(mutation!, budget);
        expect(result.detectedAt, `${name}: ${result.seedsRun} seeds run`).toBeDefined();
        expect(result.violation).toBeTruthy();
        // The scratch copy's file is restored: the next mutant starts from the code as it is.
        expect(readFileSync(join(scratch.root, mutation!.file), 'utf8')).toBe(
          readFileSync(join(repoRoot, mutation!.file), 'utf8'),
        );
      },
      120_000,
    );
  });
});
