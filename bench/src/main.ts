import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { wantsAb } from './ab/ab-args.js';
import { type BenchConfig, FULL, SMOKE } from './config.js';
import type { FrameworkId } from './frameworks/index.js';
import { benchDir, lunationFrom, machine, repoDir, versions, withoutConditions } from './machine.js';
import { canCollect } from './measure.js';
import { prepareNode24 } from './node24.js';
import { normalize, renderMarkdown, renderSummary, renderW1Svg } from './report.js';
import type { BenchResults, BenchRun, LoadedFrom, RunId, RunInfo, Task, TaskResult } from './results.js';
import { taskId } from './results.js';
import { allTasks, emptyResult, runTask } from './run-task.js';

// `--ab <base-ref>`: the A/B mode, a command of its own (src/ab/ab.ts) with its own options.
if (wantsAb(process.argv.slice(2))) {
  const { runAb } = await import('./ab/ab.js');
  await runAb(process.argv.slice(2));
  process.exit();
}

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    /** Run only tasks whose id contains this text (repeatable). */
    only: { type: 'string', multiple: true },
    /**
     * Which runs: `workspace` (the Node running this, with the workspace's packages: the peers' newest releases
     * that still run on Node 20) and `24` (Node 24 with the peers' current releases). Default: both for a full
     * run, `workspace` for a smoke run.
     */
    node: { type: 'string', multiple: true },
    /** Run every task in this process instead of one child process per task (workspace run only). */
    'in-process': { type: 'boolean', default: false },
    /** Child processes load Lunation from its TypeScript source (through tsx) instead of its built dist/. */
    source: { type: 'boolean', default: false },
    /** Re-render docs/ from bench/results/latest.json without running anything. */
    render: { type: 'boolean', default: false },
    /**
     * Merge a partial run's results (the `latest.json` it wrote) into bench/results/latest.json, replacing the
     * tasks it ran (each marked with when and at which commit it ran), then re-render docs/.
     */
    merge: { type: 'string' },
    /** Internal: run the task in this JSON file and write its result next to it. */
    child: { type: 'string' },
    /** Internal: print this process's Node version, package versions and where Lunation loads from. */
    info: { type: 'boolean', default: false },
  },
  strict: true,
});

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

function info(): RunInfo {
  const loaded = lunationFrom();
  return {
    node: process.version,
    versions: versions(),
    lunationFrom: loaded.from,
    lunationFiles: loaded.files,
  };
}

interface ChildTask {
  task: Task;
  config: BenchConfig;
  /** Where the parent asked Lunation to be loaded from; the child refuses to run from anywhere else. */
  expect: LoadedFrom;
}

async function child(file: string): Promise<void> {
  const { task, config, expect } = JSON.parse(readFileSync(file, 'utf8')) as ChildTask;
  const loaded = lunationFrom();
  const result =
    loaded.from === expect
      ? await runTask(task, config, redisUrl)
      : emptyResult(task, config, {
          status: 'failed',
          reason: `Lunation should load from ${expect} but resolves to ${loaded.from}: ${JSON.stringify(loaded.files)}`,
          seconds: 0,
        });
  writeFileSync(`${file}.result.json`, JSON.stringify({ ...result, loadedFrom: loaded.from }));
  // A framework may leave handles open (sockets, timers); the result is written, so end here.
  process.exit(0);
}

/** How to start a child process of one run. */
interface RunEnvironment {
  id: RunId;
  node: string;
  cwd: string;
  /** The bench's main.ts in that environment. */
  main: string;
  execArgv: string[];
  env: NodeJS.ProcessEnv;
  expect: LoadedFrom;
  frameworks: FrameworkId[];
}

function childEnvironment(expect: LoadedFrom): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (env.NODE_OPTIONS) {
    const options = withoutConditions(env.NODE_OPTIONS.split(/\s+/).filter(Boolean));
    env.NODE_OPTIONS = [...options, ...(expect === 'source' ? ['--conditions=@lunation/source'] : [])].join(
      ' ',
    );
  }
  return env;
}

function spawnNode(
  environment: RunEnvironment,
  args: string[],
): Promise<{ code: number | null; output: string }> {
  const output: string[] = [];
  return new Promise((resolve) => {
    const proc = spawn(environment.node, [...environment.execArgv, environment.main, ...args], {
      cwd: environment.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: environment.env,
    });
    proc.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    proc.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10 * 60_000);
    proc.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output: output.join('') });
    });
  });
}

/** Runs a task in a fresh Node process, so no framework's heap or JIT state affects another. */
async function inChild(
  environment: RunEnvironment,
  task: Task,
  config: BenchConfig,
  dir: string,
): Promise<TaskResult> {
  const file = join(dir, `${environment.id}-${taskId(task).replace(/[^a-z0-9]+/gi, '-')}.json`);
  const request: ChildTask = { task, config, expect: environment.expect };
  writeFileSync(file, JSON.stringify(request));
  const { code, output } = await spawnNode(environment, ['--child', file]);
  let result: TaskResult & { loadedFrom?: LoadedFrom };
  try {
    result = JSON.parse(readFileSync(`${file}.result.json`, 'utf8')) as TaskResult & {
      loadedFrom?: LoadedFrom;
    };
  } catch {
    const reason = `child process exited ${code}: ${output.slice(-2000)}`;
    return emptyResult(task, config, { status: 'failed', reason, seconds: 0 });
  }
  if (result.loadedFrom !== environment.expect) {
    return emptyResult(task, config, {
      status: 'failed',
      reason: `the child loaded Lunation from ${result.loadedFrom ?? 'an unknown place'}, not ${environment.expect}`,
      seconds: result.seconds,
    });
  }
  const { loadedFrom: _, ...rest } = result;
  return rest;
}

async function childInfo(environment: RunEnvironment): Promise<RunInfo> {
  const { code, output } = await spawnNode(environment, ['--info']);
  const line = output.trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(line) as RunInfo;
  } catch {
    throw new Error(`${environment.id}: the info child exited ${code}: ${output.slice(-2000)}`);
  }
}

const WORKSPACE_FRAMEWORKS: FrameworkId[] = ['bare', 'lunation', 'ai-sdk', 'langgraph', 'openai-agents'];

function runTitle(id: RunId, node: string): string {
  return id === 'node24'
    ? `Node ${node.slice(1)}, current releases`
    : `Node ${node.slice(1)}, the workspace's packages (the newest peers that run on Node 20)`;
}

/** `into` with the results of `partial` in place of (or beside) its results of the same task on the same run. */
function mergeResults(into: BenchResults, partial: BenchResults): BenchResults {
  if (partial.smoke) throw new Error('--merge: a smoke run is not comparable with a full one');
  for (const run of partial.runs) {
    const target = into.runs.find((candidate) => candidate.id === run.id);
    if (!target) throw new Error(`--merge: the results have no ${run.id} run to merge into`);
    if (target.node !== run.node) {
      throw new Error(`--merge: the ${run.id} run used Node ${target.node}, the partial run ${run.node}`);
    }
    for (const result of run.results) {
      const marked = {
        ...result,
        measured: { date: partial.date, commit: partial.machine.commit, lunationFrom: run.lunationFrom },
      };
      const index = target.results.findIndex((candidate) => candidate.id === result.id);
      if (index === -1) target.results.push(marked);
      else target.results[index] = marked;
    }
  }
  return into;
}

function writeDocs(bench: BenchResults): void {
  mkdirSync(join(repoDir, 'docs'), { recursive: true });
  writeFileSync(join(repoDir, 'docs/benchmarks.md'), renderMarkdown(bench, readBaseline()));
  writeFileSync(join(repoDir, 'docs/benchmarks-w1.svg'), renderW1Svg(bench));
}

/** The figures docs/benchmarks.md compares with: bench/results/baseline.json, when there is one. */
function readBaseline(): BenchResults | undefined {
  try {
    return JSON.parse(readFileSync(join(benchDir, 'results/baseline.json'), 'utf8')) as BenchResults;
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  if (values.child) return child(values.child);
  if (values.info) {
    console.log(JSON.stringify(info()));
    return;
  }
  if (values.merge) {
    const target = join(benchDir, 'results/latest.json');
    const bench = mergeResults(
      normalize(JSON.parse(readFileSync(target, 'utf8'))),
      normalize(JSON.parse(readFileSync(values.merge, 'utf8'))),
    );
    writeFileSync(target, `${JSON.stringify(bench, null, 2)}\n`);
    writeDocs(bench);
    console.log(renderSummary(bench));
    return;
  }
  if (values.render) {
    const bench = normalize(JSON.parse(readFileSync(join(benchDir, 'results/latest.json'), 'utf8')));
    writeDocs(bench);
    console.log(renderSummary(bench));
    return;
  }
  const config = values.smoke ? SMOKE : FULL;
  const filters = values.only ?? [];
  const selected = (values.node ?? (config.smoke ? ['workspace'] : ['workspace', '24'])).map((value) => {
    if (value === 'workspace' || value === 'current' || value === '20') return 'node20' as const;
    if (value === '24') return 'node24' as const;
    throw new Error(`--node ${value}: expected workspace or 24`);
  });
  // The Node 24 run always uses child processes (another Node binary); the workspace run may run in this one.
  const inProcessRun = (id: RunId) => id === 'node20' && (values['in-process'] || config.smoke);
  if (!canCollect) console.warn('Run with --expose-gc (pnpm bench does): memory figures need it.');
  const expect: LoadedFrom = values.source ? 'source' : 'dist';
  const scratch = mkdtempSync(join(tmpdir(), 'lunation-bench-run-'));
  const started = performance.now();
  const runs: BenchRun[] = [];
  try {
    for (const id of selected) {
      let environment: RunEnvironment;
      if (id === 'node24') {
        console.log('Preparing the Node 24 run (current releases, Lunation packed from dist/)');
        const install = prepareNode24((line) => console.log(line));
        environment = {
          id,
          node: install.node,
          cwd: install.dir,
          main: join(install.dir, 'src/main.ts'),
          execArgv: [
            '--expose-gc',
            '--import',
            'tsx',
            ...(expect === 'source' ? ['--conditions=@lunation/source'] : []),
          ],
          env: childEnvironment(expect),
          expect,
          frameworks: [...WORKSPACE_FRAMEWORKS, 'mastra'],
        };
      } else {
        environment = {
          id,
          node: process.execPath,
          cwd: benchDir,
          main: join(benchDir, 'src/main.ts'),
          execArgv: [
            ...withoutConditions(process.execArgv),
            ...(expect === 'source' ? ['--conditions=@lunation/source'] : []),
          ],
          env: childEnvironment(expect),
          expect,
          frameworks: WORKSPACE_FRAMEWORKS,
        };
      }
      const inProcess = inProcessRun(id);
      const runInfo = inProcess ? info() : await childInfo(environment);
      // Traced W1 only in the workspace run: the Node 24 install has neither @lunation/otel nor the SDK.
      const tasks = allTasks(environment.frameworks, { traced: id === 'node20' }).filter(
        (task) => filters.length === 0 || filters.some((filter) => taskId(task).includes(filter)),
      );
      const title = runTitle(id, runInfo.node);
      console.log(
        `Lunation bench (${config.smoke ? 'smoke' : 'full'}), ${title}: ${tasks.length} tasks, ${inProcess ? 'in this process' : 'one process each'}, Lunation from ${inProcess ? runInfo.lunationFrom : expect}`,
      );
      const results: TaskResult[] = [];
      for (const task of tasks) {
        const result = inProcess
          ? await runTask(task, config, redisUrl)
          : await inChild(environment, task, config, scratch);
        results.push(result);
        const note = result.status === 'ok' ? '' : ` — ${result.reason?.split('\n')[0]}`;
        const load = result.otherLoad === undefined ? '' : `, other load ${result.otherLoad.toFixed(2)}`;
        console.log(
          `  ${result.status.padEnd(11)} ${result.id} (${result.seconds.toFixed(1)} s${load})${note}`,
        );
        if (result.status === 'failed' && result.reason) console.error(result.reason);
      }
      runs.push({ id, title, ...runInfo, ...(inProcess ? {} : { lunationFrom: expect }), results });
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const bench: BenchResults = {
    date: new Date().toISOString(),
    smoke: config.smoke,
    machine: machine(),
    config,
    runs,
  };
  console.log(`\n${renderSummary(bench)}`);
  const partial = filters.length > 0 || selected.length < 2 || values.source;
  if (config.smoke || partial) {
    const out = mkdtempSync(join(tmpdir(), 'lunation-bench-out-'));
    writeFileSync(join(out, 'latest.json'), `${JSON.stringify(bench, null, 2)}\n`);
    writeFileSync(join(out, 'benchmarks.md'), renderMarkdown(bench, readBaseline()));
    writeFileSync(join(out, 'benchmarks-w1.svg'), renderW1Svg(bench));
    console.log(`Results (not published: ${config.smoke ? 'smoke run' : 'partial run'}): ${out}`);
  } else {
    mkdirSync(join(benchDir, 'results'), { recursive: true });
    writeFileSync(join(benchDir, 'results/latest.json'), `${JSON.stringify(bench, null, 2)}\n`);
    writeDocs(bench);
    console.log('Wrote bench/results/latest.json, docs/benchmarks.md and docs/benchmarks-w1.svg');
  }
  console.log(`Done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const failed = runs.flatMap((run) => run.results.filter((result) => result.status === 'failed'));
  if (failed.length > 0) {
    console.error(`${failed.length} task(s) failed: ${failed.map((result) => result.id).join(', ')}`);
    process.exitCode = 1;
  }
}

await main();
// Some frameworks keep handles open after their last run; every result is written by now.
process.exit();
