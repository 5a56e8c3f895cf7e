import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type BenchConfig, FULL, SMOKE } from './config.js';
import { benchDir, machine, repoDir, versions } from './machine.js';
import { canCollect } from './measure.js';
import { renderMarkdown, renderSummary, renderW1Svg } from './report.js';
import type { BenchResults, Task, TaskResult } from './results.js';
import { taskId } from './results.js';
import { allTasks, emptyResult, runTask } from './run-task.js';

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    /** Run only tasks whose id contains this text (repeatable). */
    only: { type: 'string', multiple: true },
    /** Run every task in this process instead of one child process per task. */
    'in-process': { type: 'boolean', default: false },
    /**
     * Child processes load the workspace packages' built dist/ (what users run) — the default for a full run;
     * `--source` loads their TypeScript source through tsx instead.
     */
    dist: { type: 'boolean', default: false },
    source: { type: 'boolean', default: false },
    /** Re-render docs/ from bench/results/latest.json without running anything. */
    render: { type: 'boolean', default: false },
    /** Internal: run the task in this JSON file and write its result next to it. */
    child: { type: 'string' },
  },
  strict: true,
});

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

async function child(file: string): Promise<void> {
  const { task, config } = JSON.parse(readFileSync(file, 'utf8')) as { task: Task; config: BenchConfig };
  const result = await runTask(task, config, redisUrl);
  writeFileSync(`${file}.result.json`, JSON.stringify(result));
  // A framework may leave handles open (sockets, timers); the result is written, so end here.
  process.exit(0);
}

/** Runs a task in a fresh Node process (same flags), so no framework's heap or JIT state affects another. */
async function inChild(task: Task, config: BenchConfig, dir: string): Promise<TaskResult> {
  const file = join(dir, `${taskId(task).replace(/[^a-z0-9]+/gi, '-')}.json`);
  writeFileSync(file, JSON.stringify({ task, config }));
  const output: string[] = [];
  const code = await new Promise<number | null>((resolve) => {
    const proc = spawn(
      process.execPath,
      [...process.execArgv, join(benchDir, 'src/main.ts'), '--child', file],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: process.env,
      },
    );
    proc.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    proc.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10 * 60_000);
    proc.on('close', (exitCode) => {
      clearTimeout(timer);
      resolve(exitCode);
    });
  });
  try {
    return JSON.parse(readFileSync(`${file}.result.json`, 'utf8')) as TaskResult;
  } catch {
    const reason = `child process exited ${code}: ${output.join('').slice(-2000)}`;
    return emptyResult(task, config, { status: 'failed', reason, seconds: 0 });
  }
}

function writeDocs(bench: BenchResults): void {
  mkdirSync(join(repoDir, 'docs'), { recursive: true });
  writeFileSync(join(repoDir, 'docs/benchmarks.md'), renderMarkdown(bench));
  writeFileSync(join(repoDir, 'docs/benchmarks-w1.svg'), renderW1Svg(bench));
}

async function main(): Promise<void> {
  if (values.child) return child(values.child);
  if (values.render) {
    const bench = JSON.parse(readFileSync(join(benchDir, 'results/latest.json'), 'utf8')) as BenchResults;
    writeDocs(bench);
    console.log(renderSummary(bench));
    return;
  }
  const config = values.smoke ? SMOKE : FULL;
  const filters = values.only ?? [];
  const tasks = allTasks().filter(
    (task) => filters.length === 0 || filters.some((f) => taskId(task).includes(f)),
  );
  const inProcess = values['in-process'] || config.smoke;
  if (values.dist && inProcess) throw new Error('--dist needs child processes (not --smoke or --in-process)');
  values.dist = !inProcess && !values.source;
  if (!canCollect) console.warn('Run with --expose-gc (pnpm bench does): memory figures need it.');
  const scratch = mkdtempSync(join(tmpdir(), 'lunation-bench-run-'));
  const started = performance.now();
  const results: TaskResult[] = [];
  console.log(
    `Lunation bench (${config.smoke ? 'smoke' : 'full'}): ${tasks.length} tasks, ${inProcess ? 'in this process' : 'one process each'}`,
  );
  try {
    for (const task of tasks) {
      const result = inProcess ? await runTask(task, config, redisUrl) : await inChild(task, config, scratch);
      results.push(result);
      const note = result.status === 'ok' ? '' : ` — ${result.reason?.split('\n')[0]}`;
      const load = result.otherLoad === undefined ? '' : `, other load ${result.otherLoad.toFixed(2)}`;
      console.log(
        `  ${result.status.padEnd(11)} ${result.id} (${result.seconds.toFixed(1)} s${load})${note}`,
      );
      if (result.status === 'failed' && result.reason) console.error(result.reason);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const bench: BenchResults = {
    date: new Date().toISOString(),
    smoke: config.smoke,
    lunationFrom: values.dist ? 'dist' : 'source',
    machine: machine(),
    versions: versions(),
    config,
    results,
  };
  console.log(`\n${renderSummary(bench)}`);
  const filtered = filters.length > 0;
  if (config.smoke || filtered) {
    const out = mkdtempSync(join(tmpdir(), 'lunation-bench-out-'));
    writeFileSync(join(out, 'latest.json'), `${JSON.stringify(bench, null, 2)}\n`);
    writeFileSync(join(out, 'benchmarks.md'), renderMarkdown(bench));
    writeFileSync(join(out, 'benchmarks-w1.svg'), renderW1Svg(bench));
    console.log(`Results (not published: ${config.smoke ? 'smoke run' : 'filtered run'}): ${out}`);
  } else {
    mkdirSync(join(benchDir, 'results'), { recursive: true });
    writeFileSync(join(benchDir, 'results/latest.json'), `${JSON.stringify(bench, null, 2)}\n`);
    writeDocs(bench);
    console.log('Wrote bench/results/latest.json, docs/benchmarks.md and docs/benchmarks-w1.svg');
  }
  console.log(`Done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const failed = results.filter((result) => result.status === 'failed');
  if (failed.length > 0) {
    console.error(`${failed.length} task(s) failed: ${failed.map((result) => result.id).join(', ')}`);
    process.exitCode = 1;
  }
}

await main();
// Some frameworks keep handles open after their last run; every result is written by now.
process.exit();
