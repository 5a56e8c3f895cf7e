// `pnpm simulate --seed N` replays one seed and prints its trace; `pnpm simulate --seeds N` runs seeds 1..N (or
// --from F) and prints seeds per second. Options: --world runtime|inbox (default runtime), --faults none|crash|all
// (default all), --twice (run each seed twice and compare trace hashes), --keep a,b,c (inject only those faults of
// the seed's schedule: a shrunk schedule), --shrink (shrink a failing seed's fault schedule; with --seeds, the first
// failing seed's), --jobs J (with --seeds: J worker processes, each a slice of the seeds).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { type FaultProfile, faultProfiles } from '../fault-profiles.js';
import type { WorldReport } from '../inbox-world.js';
import { type InboxWorldOptions, runInboxWorld } from '../inbox-world.js';
import { type RuntimeWorldOptions, runRuntimeWorld } from '../runtime-world.js';
import { shrinkFaults } from '../shrink.js';

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
    keep: { type: 'string' },
    shrink: { type: 'boolean', default: false },
    jobs: { type: 'string', default: '1' },
    json: { type: 'boolean', default: false },
  },
});

const world = values.world;
if (world !== 'runtime' && world !== 'inbox')
  throw new Error(`--world must be runtime or inbox, got ${world}`);
const profileName = values.faults as FaultProfile;
if (!(profileName in faultProfiles))
  throw new Error(`--faults must be one of ${Object.keys(faultProfiles).join(', ')}`);
const profile = faultProfiles[profileName];
const keepList = values.keep === undefined ? undefined : values.keep.split(',').filter(Boolean).map(Number);

/** How one seed is run: its whole trace kept (to print it), its trace recorded at all (to hash it), its faults kept. */
interface RunOptions {
  keepTrace?: boolean;
  trace?: boolean;
  keep?: ReadonlySet<number> | undefined;
}

function run(seed: number, options: RunOptions = {}): Promise<WorldReport> {
  const { keepTrace = false, trace = true, keep } = options;
  const keepFaults = keep === undefined ? {} : { keepFaults: keep };
  return world === 'runtime'
    ? runRuntimeWorld({
        seed,
        keepTrace,
        trace,
        ...keepFaults,
        ...(profile.runtime satisfies Omit<RuntimeWorldOptions, 'seed'>),
      })
    : runInboxWorld({
        seed,
        keepTrace,
        trace,
        ...keepFaults,
        ...(profile.inbox satisfies Omit<InboxWorldOptions, 'seed'>),
      });
}

const replay = (seed: number, keep?: readonly number[]) =>
  `pnpm simulate --seed ${seed} --world ${world} --faults ${profileName}${keep === undefined ? '' : ` --keep ${keep.join(',')}`}`;

/** Shrinks a failing seed's fault schedule and prints the smallest one with the command that replays it. */
async function shrink(seed: number): Promise<void> {
  const started = performance.now();
  const shrunk = await shrinkFaults((keep) => run(seed, { trace: false, keep }));
  const keep = shrunk.faults.map((fault) => fault.ordinal);
  console.log(
    `seed ${seed} shrunk from ${shrunk.from} faults to ${keep.length} in ${shrunk.runs} runs (${((performance.now() - started) / 1000).toFixed(1)} s): ${shrunk.faults.map((fault) => `#${fault.ordinal} ${fault.kind}`).join(', ') || 'no fault at all'}`,
  );
  console.log(`  still fails: ${shrunk.report.violations[0]}`);
  console.log(`  replay: ${replay(seed, keep)}`);
}

/** What a range of seeds did, summed (one process's, or every job's). */
interface Summary {
  count: number;
  steps: number;
  failed: number[];
  nondeterministic: number;
  faults: Record<string, number>;
  findings: Record<string, number>;
  coverage: Record<string, number>;
}

/** Adds `counts` to `into`, kind by kind. */
function add(into: Record<string, number>, counts: Record<string, number>): void {
  for (const [kind, n] of Object.entries(counts)) into[kind] = (into[kind] ?? 0) + n;
}

async function runRange(from: number, count: number): Promise<Summary> {
  const summary: Summary = {
    count,
    steps: 0,
    failed: [],
    nondeterministic: 0,
    faults: {},
    findings: {},
    coverage: {},
  };
  // The trace is recorded only to compare two runs' hashes (--twice): nothing else reads it here.
  const trace = values.twice;
  for (let seed = from; seed < from + count; seed++) {
    const report = await run(seed, { trace });
    summary.steps += report.steps;
    add(summary.faults, report.faults);
    add(summary.coverage, report.coverage ?? {});
    for (const finding of report.findings) {
      const kind = finding.replace(/(run|thread) \S+/g, '$1 …').replace(/\d+ failed/, 'n failed');
      if (summary.findings[kind] === undefined)
        console.log(`seed ${seed} (finding, not a violation): ${finding}`);
      summary.findings[kind] = (summary.findings[kind] ?? 0) + 1;
    }
    if (values.twice && (await run(seed, { trace })).traceHash !== report.traceHash) {
      summary.nondeterministic++;
      console.log(`seed ${seed}: a second run gave another trace; replay: ${replay(seed)} --twice`);
    }
    if (report.violations.length > 0) {
      summary.failed.push(seed);
      console.log(`seed ${seed}: ${report.violations[0]}\n  replay: ${replay(seed)}`);
    }
  }
  return summary;
}

/** Runs the range in `jobs` child processes (each prints its failures; the last line of each is its summary). */
async function runJobs(from: number, count: number, jobs: number): Promise<Summary> {
  const size = Math.ceil(count / jobs);
  const slices = Array.from({ length: jobs }, (_, index) => ({
    from: from + index * size,
    count: Math.max(0, Math.min(size, count - index * size)),
  })).filter((slice) => slice.count > 0);
  const summaries = await Promise.all(
    slices.map(
      (slice) =>
        new Promise<Summary>((resolve, reject) => {
          const args = [
            ...process.execArgv,
            process.argv[1] as string,
            `--seeds=${slice.count}`,
            `--from=${slice.from}`,
            `--world=${world}`,
            `--faults=${profileName}`,
            '--json',
            ...(values.twice ? ['--twice'] : []),
          ];
          const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
          let summary: Summary | undefined;
          createInterface({ input: child.stdout }).on('line', (line) => {
            if (line.startsWith('{"summary"')) summary = (JSON.parse(line) as { summary: Summary }).summary;
            else console.log(line);
          });
          child.on('error', reject);
          child.on('close', (code) => {
            if (summary === undefined)
              reject(new Error(`simulate job ${slice.from}.. exited ${code} without a summary`));
            else resolve(summary);
          });
        }),
    ),
  );
  const total: Summary = {
    count,
    steps: 0,
    failed: [],
    nondeterministic: 0,
    faults: {},
    findings: {},
    coverage: {},
  };
  for (const summary of summaries) {
    total.steps += summary.steps;
    total.failed.push(...summary.failed);
    total.nondeterministic += summary.nondeterministic;
    add(total.faults, summary.faults);
    add(total.findings, summary.findings);
    add(total.coverage, summary.coverage);
  }
  return total;
}

if (values.seed !== undefined) {
  const seed = Number(values.seed);
  const keep = keepList === undefined ? undefined : new Set(keepList);
  const report = await run(seed, { keepTrace: true, keep });
  for (const line of report.trace) console.log(line);
  console.log(
    `\nseed ${seed}: ${report.steps} steps, ${report.virtualMs} virtual ms, trace ${report.traceHash}`,
  );
  console.log(`faults: ${JSON.stringify(report.faults)}; effects: ${report.effects}`);
  if (report.coverage) console.log(`reached: ${JSON.stringify(report.coverage)}`);
  console.log(
    `fault schedule (${report.injected.length}): ${report.injected.map((fault) => `#${fault.ordinal} ${fault.kind}`).join(', ')}`,
  );
  if (values.twice) {
    const again = await run(seed, { keep });
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
    if (values.shrink) await shrink(seed);
  } else console.log('no violations');
} else {
  const count = Number(values.seeds ?? '100');
  const from = Number(values.from);
  const jobs = Math.max(1, Number(values.jobs));
  const started = performance.now();
  const summary = jobs > 1 ? await runJobs(from, count, jobs) : await runRange(from, count);
  if (values.json) console.log(JSON.stringify({ summary }));
  else {
    const seconds = (performance.now() - started) / 1000;
    const runs = values.twice ? count * 2 : count;
    console.log(
      `${count} seeds (${from}..${from + count - 1}, world ${world}, faults ${profileName}, ${jobs} job${jobs > 1 ? 's' : ''}) in ${seconds.toFixed(1)} s: ${(runs / seconds).toFixed(1)} seeds/s, ${(summary.steps / seconds).toFixed(0)} steps/s; ${summary.failed.length} with violations${values.twice ? `, ${summary.nondeterministic} not deterministic` : ''}`,
    );
    const injected = Object.values(summary.faults).reduce((sum, n) => sum + n, 0);
    console.log(`faults injected (${injected}): ${JSON.stringify(summary.faults)}`);
    const reached = Object.entries(summary.coverage).sort(([a], [b]) => a.localeCompare(b));
    if (reached.length > 0) console.log(`reached: ${reached.map(([kind, n]) => `${kind} ${n}`).join('; ')}`);
    for (const [kind, n] of Object.entries(summary.findings)) console.log(`finding in ${n} seeds: ${kind}`);
    if (summary.failed.length > 0) {
      console.log(`failing seeds: ${summary.failed.join(', ')}`);
      if (values.shrink) await shrink(summary.failed[0] as number);
    }
  }
  if (summary.failed.length > 0 || summary.nondeterministic > 0) process.exitCode = 1;
}

// Workers that crashed mid-run leave the runtime's real timers behind (its claim keep-alive): end here.
process.exit(process.exitCode ?? 0);
