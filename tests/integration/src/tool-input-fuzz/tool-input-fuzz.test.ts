import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LunationStore } from '@lunation/contract';
import { MemoryStore } from '@lunation/store-memory';
import { SqliteStore } from '@lunation/store-sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../fixtures/seeded-random.js';
import type { FuzzProblem } from './fuzz-checks.js';
import { checkFuzzRun } from './fuzz-checks.js';
import { FuzzDriver } from './fuzz-driver.js';
import { callCount, createFuzzRun } from './hostile-calls.js';

/** `LUNATION_FUZZ_SEED` (random when unset) and `LUNATION_FUZZ_CALLS` (generated calls without a store). */
function setting(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`${name} must be a whole number, got "${raw}"`);
  return value;
}

const seed = setting('LUNATION_FUZZ_SEED', Math.floor(Math.random() * 2 ** 31));
const calls = setting('LUNATION_FUZZ_CALLS', 6_000);
const directory = mkdtempSync(join(tmpdir(), 'lunation-fuzz-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

interface FuzzBackend {
  name: string;
  /** Durable stores serialise every value; they get a share of the calls. */
  share: number;
  open(): Promise<LunationStore | undefined>;
}

const backends: FuzzBackend[] = [
  { name: 'no store', share: 1, open: async () => undefined },
  { name: 'memory store', share: 1 / 3, open: async () => new MemoryStore() },
  {
    name: 'sqlite store',
    share: 1 / 6,
    open: () => SqliteStore.open({ path: join(directory, 'fuzz.sqlite') }),
  },
];

function formatProblems(backend: string, problems: FuzzProblem[]): string {
  const byKind = new Map<string, FuzzProblem[]>();
  for (const problem of problems) byKind.set(problem.kind, [...(byKind.get(problem.kind) ?? []), problem]);
  const lines = [
    `The tool-input fuzz (${backend}) found ${problems.length} problem(s) in ${byKind.size} kind(s):`,
  ];
  for (const [kind, found] of [...byKind].sort((a, b) => b[1].length - a[1].length)) {
    lines.push(`- ${kind} (${found.length}×), e.g. run ${found[0]?.run}: ${found[0]?.detail}`);
  }
  lines.push(
    '',
    `Replay: LUNATION_FUZZ_SEED=${seed} LUNATION_FUZZ_CALLS=${calls} pnpm vitest run --project integration tool-input-fuzz -t "${backend}"`,
  );
  return lines.join('\n');
}

describe.each(backends)('tool-input fuzz with $name', (backend) => {
  it('turns every hostile argument, return and throw into a clear error result; runs never fail', async () => {
    const store = await backend.open();
    const driver = new FuzzDriver(store);
    const random = SeededRandom.derive(seed, 'fuzz', backend.name);
    const budget = Math.max(1, Math.round(calls * backend.share));
    const problems: FuzzProblem[] = [];
    let generated = 0;
    let runs = 0;
    try {
      while (generated < budget) {
        const run = createFuzzRun(random, runs++, budget - generated);
        generated += callCount(run);
        problems.push(...checkFuzzRun(await driver.drive(run)));
      }
    } finally {
      await store?.close();
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const { executions, decisions } = driver.eventCount;
    console.log(
      `tool-input fuzz (${backend.name}): seed ${seed}, ${runs} runs, ${generated} calls, ${executions} tool executions, ${decisions} decisions, ${problems.length} problems`,
    );
    expect(generated).toBeGreaterThan(0);
    if (problems.length > 0) expect.fail(formatProblems(backend.name, problems));
  }, 120_000);
});
