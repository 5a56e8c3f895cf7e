// `pnpm --filter @lunation/simulation mutants [--only NAME[,NAME…]] [--max-seeds N] [--out FILE] [--list] [--replay SEED]`: the
// mutation campaign. The checkout is copied to a scratch directory once; each mutation is applied there, the
// simulator runs seeds from 1 until the first violation (at most --max-seeds), and the file is restored. Prints a
// table and writes it (Markdown, and JSON beside it) to --out. Fails when a mutation no longer applies.
import { writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type MutantResult, resultTable, ScratchCheckout } from './campaign.js';
import { checkMutations } from './mutation.js';
import { mutations } from './mutations.js';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: {
    only: { type: 'string' },
    'max-seeds': { type: 'string', default: '5000' },
    out: { type: 'string' },
    list: { type: 'boolean', default: false },
    replay: { type: 'string' },
  },
});

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
checkMutations(repoRoot, mutations);
const names = values.only?.split(',').map((name) => name.trim());
const unknown = names?.filter((name) => !mutations.some((mutation) => mutation.name === name)) ?? [];
if (unknown.length > 0) throw new Error(`--only: no mutation named ${unknown.join(', ')}`);
const chosen =
  names === undefined ? mutations : mutations.filter((mutation) => names.includes(mutation.name));
if (values.list) {
  for (const mutation of chosen)
    console.log(`${mutation.name} (${mutation.origin}): ${mutation.description}`);
  process.exit(0);
}
if (values.replay !== undefined) {
  // Replays one seed of one mutant: `mutants --only NAME --replay SEED`.
  if (chosen.length !== 1) throw new Error('--replay needs --only with one mutation');
  const scratch = ScratchCheckout.create(repoRoot);
  try {
    process.exitCode = await scratch.replay(chosen[0]!, Number(values.replay));
  } finally {
    scratch.dispose();
  }
  process.exit();
}
const maxSeeds = Number(values['max-seeds']);
if (!Number.isInteger(maxSeeds) || maxSeeds < 1) throw new Error('--max-seeds must be a positive integer');

const scratch = ScratchCheckout.create(repoRoot);
console.log(`scratch copy: ${scratch.root}`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    scratch.dispose();
    process.exit(130);
  });
}
const results: MutantResult[] = [];
try {
  for (const mutation of chosen) {
    console.log(`\n${mutation.name}: ${mutation.description}`);
    const result = await scratch.run(mutation, maxSeeds);
    results.push(result);
    console.log(
      result.detectedAt === undefined
        ? `  not detected in ${result.seedsRun} seeds (${result.seconds.toFixed(0)} s)${result.needs ? `; needs ${result.needs}` : ''}${result.masked ? `; masked: ${result.masked}` : ''}`
        : `  detected at seed ${result.detectedAt} (${result.seconds.toFixed(0)} s): ${result.violation}`,
    );
  }
} finally {
  scratch.dispose();
}
const table = resultTable(results, maxSeeds);
console.log(`\n${table}`);
const out =
  values.out === undefined
    ? resolve(repoRoot, 'packages/simulation/mutation-campaign.md')
    : resolve(process.env.INIT_CWD ?? process.cwd(), values.out);
writeFileSync(out, table);
writeFileSync(out.replace(/\.md$/, '') + '.json', `${JSON.stringify(results, null, 2)}\n`);
console.log(`written: ${out}`);
const undetected = results.filter(
  (result) => result.detectedAt === undefined && result.needs === undefined && result.masked === undefined,
);
if (undetected.length > 0) {
  console.log(
    `not detected, and neither waiting on a feature nor masked: ${undetected.map((result) => result.name).join(', ')}`,
  );
  process.exitCode = 1;
}
