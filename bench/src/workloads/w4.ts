import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { benchDir, machine, packageVersion } from '../machine.js';
import { type Timing, type TimingPlan, timeRuns } from '../measure.js';
import { W4_FRAMEWORKS, type W4FrameworkId } from './w4-frameworks.js';
import { startW4Server } from './w4-stream.js';

/**
 * W4: one agent step through the vendor SDK over loopback HTTP. A server process answers every call with the
 * same recorded Chat Completions stream; each framework runs in its own process and makes sequential steps
 * (a user message in, the 26-token answer streamed out and checked). µs per step, wall and CPU of the client
 * process; the server's work is in its own process. Run with `pnpm --filter @lunation/bench run bench:w4`.
 */

const FULL: TimingPlan = {
  warmupMs: 1500,
  warmupRuns: 200,
  warmupMaxMs: 8000,
  reps: 15,
  repMs: 150,
  minRunsPerRep: 5,
};
const SMOKE: TimingPlan = {
  warmupMs: 0,
  warmupRuns: 3,
  warmupMaxMs: 5000,
  reps: 2,
  repMs: 0,
  minRunsPerRep: 2,
};

const ORDER: W4FrameworkId[] = ['openai-sdk', 'lunation', 'ai-sdk', 'openai-agents'];

export interface W4Result {
  framework: W4FrameworkId;
  name: string;
  api: string;
  status: 'ok' | 'failed';
  reason?: string;
  timing?: Timing;
  requests?: number;
}

/** Child: time one framework against the server at `url`; prints its result as the last stdout line. */
async function child(framework: W4FrameworkId, url: string, plan: TimingPlan): Promise<void> {
  const entry = W4_FRAMEWORKS[framework];
  const harness = await entry.create(url);
  let steps = 0;
  const timing = await timeRuns(async () => {
    await harness.step();
    steps++;
  }, plan);
  await harness.close();
  if (steps !== timing.totalRuns) throw new Error(`${steps} steps ran, ${timing.totalRuns} were timed`);
  const result: W4Result = { framework, name: entry.name, api: entry.api, status: 'ok', timing };
  process.stdout.write(`\n${JSON.stringify(result)}\n`);
  process.exit(0);
}

/** Server process: prints its URL, serves until killed. */
async function serve(): Promise<void> {
  const server = await startW4Server();
  process.stdout.write(`${server.url}\n`);
  process.on('SIGTERM', () => {
    void server.close().then(() => {
      process.stdout.write(`requests ${server.requests()}\n`);
      process.exit(0);
    });
  });
}

function spawnSelf(args: string[]) {
  return spawn(process.execPath, [...process.execArgv, join(benchDir, 'src/workloads/w4.ts'), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: process.env,
  });
}

async function runChild(framework: W4FrameworkId, url: string, smoke: boolean): Promise<W4Result> {
  const proc = spawnSelf(['--child', framework, '--url', url, ...(smoke ? ['--smoke'] : [])]);
  const output: string[] = [];
  proc.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  proc.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const code = await new Promise<number | null>((resolve) => proc.on('close', resolve));
  const last = output.join('').trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(last) as W4Result;
  } catch {
    const { name, api } = W4_FRAMEWORKS[framework];
    return {
      framework,
      name,
      api,
      status: 'failed',
      reason: `exit ${code}: ${output.join('').slice(-1500)}`,
    };
  }
}

/** CPU time leads: on a shared machine the wall time of a loopback step mostly measures the scheduler. */
function table(results: W4Result[]): string {
  const floor = results.find((result) => result.framework === 'openai-sdk')?.timing?.cpuPerRunUs.median;
  const rows = results.map((result) => {
    if (!result.timing) return `| ${result.name} | failed | | | ${result.api} |`;
    const { perRunUs, cpuPerRunUs } = result.timing;
    const over =
      floor === undefined
        ? ''
        : `${cpuPerRunUs.median >= floor ? '+' : ''}${Math.round(cpuPerRunUs.median - floor)}`;
    const range = (stats: { median: number; min: number; max: number }) =>
      `${Math.round(stats.median)} (${Math.round(stats.min)}–${Math.round(stats.max)})`;
    return `| ${result.name} | ${range(cpuPerRunUs)} | ${over} | ${range(perRunUs)} | ${result.api} |`;
  });
  return [
    '| Framework | CPU µs/step, median (min–max) | CPU over the SDK alone | wall µs/step, median (min–max) | API |',
    '| --- | --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      smoke: { type: 'boolean', default: false },
      serve: { type: 'boolean', default: false },
      child: { type: 'string' },
      url: { type: 'string' },
      only: { type: 'string', multiple: true },
    },
    strict: true,
  });
  const plan = values.smoke ? SMOKE : FULL;
  if (values.serve) return serve();
  if (values.child) return child(values.child as W4FrameworkId, values.url ?? '', plan);

  const server = spawnSelf(['--serve']);
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: server.stdout });
    lines.once('line', resolve);
    server.once('exit', (code) => reject(new Error(`the W4 server exited ${code}`)));
  });
  const results: W4Result[] = [];
  try {
    for (const framework of ORDER) {
      if (values.only && !values.only.includes(framework)) continue;
      const result = await runChild(framework, url, values.smoke);
      results.push(result);
      const figures = result.timing
        ? `${Math.round(result.timing.cpuPerRunUs.median)} CPU µs/step, ${Math.round(result.timing.perRunUs.median)} wall µs/step`
        : `failed\n${result.reason}`;
      process.stdout.write(`${result.name}: ${figures}\n`);
    }
  } finally {
    server.kill('SIGTERM');
  }
  const versions = Object.fromEntries(
    [
      'openai',
      '@lunation/runtime',
      '@lunation/provider-openai',
      'ai',
      '@ai-sdk/openai',
      '@openai/agents',
    ].map((name) => [name, packageVersion(name)]),
  );
  const loadAverage = (await import('node:os')).loadavg();
  // Lunation as users run it: the built packages (no `@lunation/source` condition), checked here.
  const lunationFrom = import.meta.resolve('@lunation/runtime').includes('/dist/') ? 'dist' : 'source';
  const report = {
    workload: 'w4',
    date: new Date().toISOString(),
    node: process.version,
    machine: machine(),
    loadAverage,
    versions,
    lunationFrom,
    plan,
    results,
  };
  process.stdout.write(
    `\n${table(results)}\n\nNode ${process.version}, load average ${loadAverage.map((value) => value.toFixed(1)).join(' ')}\n${JSON.stringify(versions)}\n`,
  );
  if (!values.smoke) {
    mkdirSync(join(benchDir, 'results'), { recursive: true });
    const file = `results/w4-node${process.versions.node.split('.')[0]}.json`;
    writeFileSync(join(benchDir, file), `${JSON.stringify(report, null, 2)}\n`);
    process.stdout.write(`Wrote bench/${file}\n`);
  }
  if (results.some((result) => result.status !== 'ok')) process.exitCode = 1;
}

await main();
