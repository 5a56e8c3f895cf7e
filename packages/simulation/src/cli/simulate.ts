// `pnpm simulate --seed N` replays one seed and prints its trace; `pnpm simulate --seeds N` runs seeds 1..N (or
// --from F) and prints seeds per second. Options: --world runtime|inbox (default runtime), --faults none|crash|all
// (default all), --twice (run each seed twice and compare trace hashes).
import { parseArgs } from 'node:util';
import { type FaultProfile, faultProfiles } from '../fault-profiles.js';
import type { WorldReport } from '../inbox-world.js';
import { type InboxWorldOptions, runInboxWorld } from '../inbox-world.js';
import { type RuntimeWorldOptions, runRuntimeWorld } from '../runtime-world.js';

const { values } = parseArgs({
  // pnpm passes the `--` that separates its own options on.
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: {
    seed: { type: 'string' },
    seeds: { type: 'string' },
    from: { type: 'string', default: '1' },
    world: { type: 'string', default: 'runtime' },
    faults: { type: 'string', default: 'all' },
    twice: { type: 'boolean', default: false },
  },
});

const world = values.world;
if (world !== 'runtime' && world !== 'inbox')
  throw new Error(`--world must be runtime or inbox, got ${world}`);
const profileName = values.faults as FaultProfile;
if (!(profileName in faultProfiles))
  throw new Error(`--faults must be one of ${Object.keys(faultProfiles).join(', ')}`);
const profile = faultProfiles[profileName];

function run(seed: number, keepTrace: boolean): Promise<WorldReport> {
  return world === 'runtime'
    ? runRuntimeWorld({ seed, keepTrace, ...(profile.runtime satisfies Omit<RuntimeWorldOptions, 'seed'>) })
    : runInboxWorld({ seed, keepTrace, ...(profile.inbox satisfies Omit<InboxWorldOptions, 'seed'>) });
}

const replay = (seed: number) => `pnpm simulate --seed ${seed} --world ${world} --faults ${profileName}`;

if (values.seed !== undefined) {
  const seed = Number(values.seed);
  const report = await run(seed, true);
  for (const line of report.trace) console.log(line);
  console.log(
    `\nseed ${seed}: ${report.steps} steps, ${report.virtualMs} virtual ms, trace ${report.traceHash}`,
  );
  console.log(`faults: ${JSON.stringify(report.faults)}; effects: ${report.effects}`);
  if (values.twice) {
    const again = await run(seed, false);
    console.log(
      again.traceHash === report.traceHash
        ? 'replayed: same trace'
        : `replayed: DIFFERENT trace ${again.traceHash}`,
    );
    if (again.traceHash !== report.traceHash) process.exitCode = 1;
  }
  if (report.findings.length > 0) console.log(`findings:\n  ${report.findings.join('\n  ')}`);
  if (report.violations.length > 0) {
    console.log(`violations:\n  ${report.violations.join('\n  ')}`);
    process.exitCode = 1;
  } else console.log('no violations');
} else {
  const count = Number(values.seeds ?? '100');
  const from = Number(values.from);
  const started = performance.now();
  const faults: Record<string, number> = {};
  let steps = 0;
  let failed = 0;
  let nondeterministic = 0;
  const findings = new Map<string, number>();
  for (let seed = from; seed < from + count; seed++) {
    const report = await run(seed, false);
    steps += report.steps;
    for (const [kind, n] of Object.entries(report.faults)) faults[kind] = (faults[kind] ?? 0) + n;
    for (const finding of report.findings) {
      const kind = finding.replace(/^run \S+: /, '');
      if (!findings.has(kind)) console.log(`seed ${seed} (finding, not a violation): ${finding}`);
      findings.set(kind, (findings.get(kind) ?? 0) + 1);
    }
    if (values.twice && (await run(seed, false)).traceHash !== report.traceHash) {
      nondeterministic++;
      console.log(`seed ${seed}: a second run gave another trace; replay: ${replay(seed)} --twice`);
    }
    if (report.violations.length > 0) {
      failed++;
      console.log(`seed ${seed}: ${report.violations[0]}\n  replay: ${replay(seed)}`);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const runs = values.twice ? count * 2 : count;
  console.log(
    `${count} seeds (${from}..${from + count - 1}, world ${world}, faults ${profileName}) in ${seconds.toFixed(1)} s: ${(runs / seconds).toFixed(1)} seeds/s, ${(steps / seconds).toFixed(0)} steps/s; ${failed} with violations${values.twice ? `, ${nondeterministic} not deterministic` : ''}`,
  );
  console.log(`faults injected: ${JSON.stringify(faults)}`);
  for (const [kind, n] of findings) console.log(`finding in ${n} seeds: ${kind}`);
  if (failed > 0 || nondeterministic > 0) process.exitCode = 1;
}

// Workers that crashed mid-run leave the runtime's real timers behind (its claim keep-alive): end here.
process.exit(process.exitCode ?? 0);
