/**
 * The A/B mode: `pnpm bench --ab <base-ref>` (or `pnpm --filter @lunation/bench run bench:ab -- --ab <ref>`).
 * Builds the base commit in a git worktree under `.cache/bench-ab/`, then runs base and head interleaved in
 * one session, each workload of each round in a fresh process on each side (the side that goes first
 * alternates by round), and reports head/base per workload with its spread. See bench/README.md.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchDir, withoutConditions } from '../machine.js';
import { AB_USAGE, type AbOptions, AbUsageError, type AbWorkload, parseAbArgs } from './ab-args.js';
import type { AbChildRequest, AbChildResult } from './ab-child.js';
import { countFigures, countPlan } from './ab-config.js';
import { type AbPair, parseDumpTotal, type RatioSummary, summarizeRatios, verdict } from './ab-stats.js';
import { type AbTree, commitTree, workingTree } from './ab-tree.js';

interface SideRun {
  round: number;
  side: AbTree['side'];
  workload: AbWorkload;
  figures: Record<string, number>;
  otherLoad?: number;
}

/** The environment of a child: no `--conditions` (Lunation loads from dist/ through the child's hook). */
function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (env.NODE_OPTIONS)
    env.NODE_OPTIONS = withoutConditions(env.NODE_OPTIONS.split(/\s+/).filter(Boolean)).join(' ');
  return env;
}

/**
 * How long a child may take before it is killed: a timed child takes seconds; a counted one runs 50 to 100 times
 * slower under callgrind, and on a machine shared with a load of 50 or more it took over half an hour.
 */
const CHILD_TIMEOUT_MS = { time: 30 * 60_000, count: 4 * 60 * 60_000 } as const;

function spawnChild(
  command: string,
  args: string[],
  timeoutMs: number,
): Promise<{ code: number | null; stderr: string; output: string; killed: boolean }> {
  return new Promise((resolve) => {
    const proc = spawn(command, args, { cwd: benchDir, stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() });
    const output: string[] = [];
    const stderr: string[] = [];
    proc.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    proc.stderr.on('data', (chunk: Buffer) => {
      stderr.push(chunk.toString());
      output.push(chunk.toString());
    });
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      proc.kill('SIGKILL');
    }, timeoutMs);
    proc.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr: stderr.join(''), output: output.join(''), killed });
    });
  });
}

const CHILD = join(benchDir, 'src/ab/ab-child.ts');

/** Runs a child; with `count`, under callgrind, answering the instructions of each window the child marked. */
async function runChild(
  request: AbChildRequest,
  dir: string,
): Promise<{ result: AbChildResult; windows: number[] }> {
  const name = `${request.workload.replace(/[^a-z0-9]+/gi, '-')}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(request));
  const counted = request.kind === 'count';
  const node = [...(counted ? ['--single-threaded'] : []), '--expose-gc', '--import', 'tsx', CHILD, file];
  const dumps = join(dir, `${name}.callgrind`);
  const { code, output, killed } = counted
    ? await spawnChild(
        'valgrind',
        [
          '--tool=callgrind',
          `--callgrind-out-file=${dumps}`,
          '--dump-before=uv_os_getpriority',
          process.execPath,
          ...node,
        ],
        CHILD_TIMEOUT_MS.count,
      )
    : await spawnChild(process.execPath, node, CHILD_TIMEOUT_MS.time);
  let result: AbChildResult;
  try {
    result = JSON.parse(readFileSync(`${file}.result.json`, 'utf8')) as AbChildResult;
  } catch {
    throw new Error(
      `The ${request.workload} child for ${request.tree} ${killed ? `was killed after ${CHILD_TIMEOUT_MS[request.kind] / 60_000} minutes` : `exited ${code}`}:\n${output.slice(-3000)}`,
    );
  }
  if (!counted) return { result, windows: [] };
  // Dump 1 holds start-up and warm-up; dump k + 1 the k-th window; the last file (no suffix) what followed.
  const windows = (request.count?.windows ?? []).map((_, index) =>
    parseDumpTotal(readFileSync(`${dumps}.${index + 2}`, 'utf8')),
  );
  const extra = `${dumps}.${windows.length + 2}`;
  if (existsSync(extra))
    throw new Error(`callgrind dumped more often than the child marked windows (${extra})`);
  return { result, windows };
}

async function runSide(
  tree: AbTree,
  workload: AbWorkload,
  round: number,
  options: AbOptions,
  dir: string,
): Promise<SideRun> {
  const common = { tree: tree.dir, workload, smoke: options.smoke };
  if (options.measure === 'wall') {
    const { result } = await runChild({ ...common, kind: 'time' }, dir);
    return {
      round,
      side: tree.side,
      workload,
      figures: result.figures,
      ...(result.otherLoad === undefined ? {} : { otherLoad: result.otherLoad }),
    };
  }
  const plan = countPlan(workload, options.smoke);
  const { windows } = await runChild({ ...common, kind: 'count', count: plan }, dir);
  return { round, side: tree.side, workload, figures: countFigures(plan.windows, windows) };
}

/** One metric of one workload over the rounds. */
export interface AbMetricSummary extends RatioSummary {
  workload: AbWorkload;
  metric: string;
  verdict: ReturnType<typeof verdict>;
}

/** The head/base summaries of every metric the runs of both sides reported in every round. */
export function summarize(runs: readonly SideRun[], workloads: readonly AbWorkload[]): AbMetricSummary[] {
  const summaries: AbMetricSummary[] = [];
  for (const workload of workloads) {
    const own = runs.filter((run) => run.workload === workload);
    const rounds = [...new Set(own.map((run) => run.round))];
    const metrics = [...new Set(own.flatMap((run) => Object.keys(run.figures)))];
    for (const metric of metrics) {
      const pairs: AbPair[] = [];
      for (const round of rounds) {
        const base = own.find((run) => run.round === round && run.side === 'base')?.figures[metric];
        const head = own.find((run) => run.round === round && run.side === 'head')?.figures[metric];
        if (base !== undefined && head !== undefined) pairs.push({ base, head });
      }
      if (pairs.length === 0) continue;
      const summary = summarizeRatios(pairs);
      summaries.push({ workload, metric, ...summary, verdict: verdict(summary) });
    }
  }
  return summaries;
}

const fixed = (value: number, digits: number) => value.toFixed(digits);
function figure(value: number): string {
  if (value >= 100_000) return `${(value / 1000).toFixed(0)}k`;
  if (value >= 100) return value.toFixed(0);
  return value.toFixed(2);
}

/** The report as Markdown: what ran, then one row per workload and metric. */
export function renderAbReport(input: {
  base: AbTree;
  head: AbTree;
  options: AbOptions;
  node: string;
  machine: string;
  loadBefore: number[];
  loadAfter: number[];
  otherLoad: number[];
  seconds: number;
  summaries: AbMetricSummary[];
}): string {
  const { base, head, options, summaries } = input;
  const load = (values: number[]) => values.map((value) => value.toFixed(1)).join(' / ');
  const other = input.otherLoad.length
    ? `; other processes kept ${fixed(Math.min(...input.otherLoad), 1)}–${fixed(Math.max(...input.otherLoad), 1)} cores busy during the timed children`
    : '';
  const lines = [
    `## A/B: ${head.describe} against ${base.describe}`,
    '',
    `- base ${base.commit.slice(0, 12)} (${base.dir}), head ${head.commit.slice(0, 12)} (${head.dir})`,
    `- ${options.measure === 'wall' ? 'wall and CPU time' : 'instructions (valgrind callgrind, node --single-threaded; counted in windows of work after a warm-up, start-up excluded)'}, ${options.rounds} round(s), each workload a fresh process per side, the side that goes first alternating by round${options.smoke ? ', smoke sizes (not comparable with a full run)' : ''}`,
    `- Node ${input.node}, ${input.machine}; load average (1/5/15 min) ${load(input.loadBefore)} before, ${load(input.loadAfter)} after${other}; ${input.seconds.toFixed(0)} s`,
    '- ratio = head/base per round; median, min–max over the rounds, and a 95 % bootstrap interval of the median',
    '',
    '| workload | metric | base | head | head/base | min–max | 95 % interval | verdict |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const summary of summaries) {
    lines.push(
      `| ${summary.workload} | ${summary.metric} | ${figure(summary.baseMedian)} | ${figure(summary.headMedian)} | ${fixed(summary.median, 3)} | ${fixed(summary.min, 3)}–${fixed(summary.max, 3)} | ${fixed(summary.low, 3)}–${fixed(summary.high, 3)} | ${summary.verdict} |`,
    );
  }
  return lines.join('\n');
}

/** Runs the A/B mode for a command line; the report goes to stdout. */
export async function runAb(argv: readonly string[]): Promise<void> {
  let options: AbOptions;
  try {
    options = parseAbArgs(argv);
  } catch (error) {
    if (error instanceof AbUsageError) {
      console.error(error.message);
      process.exitCode = 2;
      return;
    }
    throw error;
  }
  if (options.measure === 'instructions') {
    try {
      execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
    } catch {
      throw new AbUsageError('--instructions needs valgrind (callgrind) on the PATH');
    }
  }
  const log = (line: string) => console.log(line);
  const started = performance.now();
  const base = commitTree(options.base, 'base', log);
  const head = options.head ? commitTree(options.head, 'head', log) : workingTree(log);
  const loadBefore = loadavg();
  const dir = mkdtempSync(join(tmpdir(), 'lunation-bench-ab-'));
  const runs: SideRun[] = [];
  try {
    for (let round = 1; round <= options.rounds; round++) {
      const order = round % 2 === 1 ? [base, head] : [head, base];
      for (const workload of options.workloads) {
        // Timed sides run one after the other; counted sides at once (a count does not depend on the load).
        const sides =
          options.measure === 'wall'
            ? [
                await runSide(order[0]!, workload, round, options, dir),
                await runSide(order[1]!, workload, round, options, dir),
              ]
            : await Promise.all(order.map((tree) => runSide(tree, workload, round, options, dir)));
        for (const run of sides) {
          runs.push(run);
          const shown = Object.entries(run.figures)
            .map(([metric, value]) => `${metric} ${figure(value)}`)
            .join(', ');
          const other = run.otherLoad === undefined ? '' : ` (other load ${run.otherLoad.toFixed(1)})`;
          log(`round ${round}/${options.rounds} ${workload} ${run.side}: ${shown}${other}`);
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const summaries = summarize(runs, options.workloads);
  const cpu = cpus();
  const report = renderAbReport({
    base,
    head,
    options,
    node: process.version,
    machine: `${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${cpu.length} cores`,
    loadBefore,
    loadAfter: loadavg(),
    otherLoad: runs.flatMap((run) => (run.otherLoad === undefined ? [] : [run.otherLoad])),
    seconds: (performance.now() - started) / 1000,
    summaries,
  });
  console.log(`\n${report}`);
  if (options.out) {
    writeFileSync(
      options.out,
      `${JSON.stringify({ date: new Date().toISOString(), base, head, options, node: process.version, runs, summaries }, null, 2)}\n`,
    );
    console.log(`\nWrote ${options.out}`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runAb(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error instanceof AbUsageError ? `${error.message}\n${AB_USAGE}` : error);
    process.exitCode = 1;
  });
  process.exit();
}
