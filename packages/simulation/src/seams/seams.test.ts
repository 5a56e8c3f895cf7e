import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { seamAllowList } from './seam-allow-list.js';
import { countSeams, ruleTotals, type SeamCounts, scanSeams, scanSource, seamPackages } from './seam-scan.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));

/** The differences between the code and the allow-list, one line each. */
function differences(actual: SeamCounts, allowed: SeamCounts): { added: string[]; removed: string[] } {
  const added: string[] = [];
  const removed: string[] = [];
  for (const file of new Set([...Object.keys(actual), ...Object.keys(allowed)])) {
    const now = actual[file] ?? {};
    const before = allowed[file] ?? {};
    for (const rule of new Set([...Object.keys(now), ...Object.keys(before)]) as Set<keyof typeof now>) {
      const count = now[rule] ?? 0;
      const limit = before[rule] ?? 0;
      if (count > limit) added.push(`${file}: ${rule} ${limit} -> ${count}`);
      if (count < limit) removed.push(`${file}: ${rule} ${limit} -> ${count}`);
    }
  }
  return { added, removed };
}

describe('the Clock / IdSource seam rule', () => {
  it('covers the contract, the runtime, every store and dispatcher, not the kits', () => {
    const packages = seamPackages(root);
    expect(packages).toEqual(
      expect.arrayContaining(['contract', 'runtime', 'store-memory', 'dispatch-bullmq']),
    );
    expect(packages.filter((name) => name.endsWith('testkit'))).toEqual([]);
  });

  it('finds every forbidden global, and not look-alikes', () => {
    const text = [
      "import { setTimeout as wait } from 'node:timers/promises';",
      'const a = Date.now();',
      'const b = new Date();',
      'const c = new Date(0);',
      'const d = performance.now();',
      'const e = Math.random();',
      'const f = crypto.randomUUID();',
      'const g = randomUUID();',
      'setTimeout(() => {}, 1); clearTimeout(t); setInterval(f, 1); clearInterval(t); setImmediate(f);',
      'const h = AbortSignal.timeout(5); const i = process.hrtime.bigint(); const j = createId();',
      'const k = clock.now(); const l = this.setTimeout(f); const m = Math.max(1, 2); const n = ids.id();',
    ].join('\n');
    expect(scanSource('x.ts', text).map((site) => `${site.line} ${site.rule}`)).toEqual([
      '1 timers import',
      '2 Date.now',
      '3 new Date()',
      '5 performance.now',
      '6 Math.random',
      '7 randomUUID',
      '8 randomUUID',
      '9 setTimeout',
      '9 clearTimeout',
      '9 setInterval',
      '9 clearInterval',
      '9 setImmediate',
      '10 AbortSignal.timeout',
      '10 process.hrtime',
      '10 createId',
    ]);
  });

  it('allows only the listed call sites: no new one, and the list shrinks with the code', () => {
    const actual = countSeams(scanSeams(root));
    const { added, removed } = differences(actual, seamAllowList);
    expect(
      added,
      'New direct uses of host time, timers or randomness: take a Clock / IdSource (@lunation/contract) instead. A file that only moved: `pnpm --filter @lunation/simulation seams --write`.',
    ).toEqual([]);
    expect(
      removed,
      'Call sites were wired to the Clock / IdSource: shrink the allow-list with `pnpm --filter @lunation/simulation seams --write`.',
    ).toEqual([]);
  });

  it('the allow-list only ever shrinks: no rule grows past the 180 sites of 2026-11-29 (177, and 3 in code merged that day from branches written before the rule)', () => {
    const totals = ruleTotals(seamAllowList);
    const recorded: Record<string, number> = {
      'Date.now': 92,
      setTimeout: 24,
      clearTimeout: 20,
      'new Date()': 1,
      setInterval: 4,
      clearInterval: 4,
      'performance.now': 4,
      randomUUID: 7,
      createId: 25,
    };
    for (const [rule, total] of totals) expect(total, rule).toBeLessThanOrEqual(recorded[rule] ?? 0);
  });
});
