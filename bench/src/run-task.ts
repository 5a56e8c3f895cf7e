import type { BenchConfig } from './config.js';
import { cpuSnapshot, otherLoad } from './contention.js';
import type { FrameworkId } from './frameworks/index.js';
import { type StoreKind, Unavailable } from './harness.js';
import { runW1PostgresRoundTrips } from './postgres.js';
import type {
  Task,
  TaskResult,
  W1PostgresRoundTripResult,
  W1Result,
  W1RoundTripResult,
  W2Result,
  W3Result,
} from './results.js';
import { taskId } from './results.js';
import { createScratch } from './workloads/scratch.js';
import { runW1, runW1RoundTrips } from './workloads/w1.js';
import { runW2 } from './workloads/w2.js';
import { runW3 } from './workloads/w3.js';

/** A result of `task` with no figures yet. */
export function emptyResult(
  task: Task,
  config: BenchConfig,
  outcome: { status: 'ok' | 'unavailable' | 'failed'; reason?: string; seconds: number; otherLoad?: number },
): TaskResult {
  const common = { id: taskId(task), ...outcome };
  switch (task.kind) {
    case 'w1':
      return {
        ...common,
        kind: 'w1',
        framework: task.framework,
        mode: task.mode,
        store: task.store,
        ...(task.traced ? { traced: true } : {}),
        timings: {},
      };
    case 'w1-redis-round-trips':
      return { ...common, kind: 'w1-redis-round-trips', counts: [] };
    case 'w1-postgres-round-trips':
      return { ...common, kind: 'w1-postgres-round-trips', counts: [] };
    case 'w2':
      return {
        ...common,
        kind: 'w2',
        framework: task.framework,
        mode: task.mode,
        ...(task.store ? { store: task.store } : {}),
        runs: config.w2.runs,
        steps: config.w2.steps,
        modelDelayMs: config.w2.modelDelayMs,
        idealMs: config.w2.steps * config.w2.modelDelayMs,
      };
    case 'w3':
      return {
        ...common,
        kind: 'w3',
        store: task.store,
        threads: config.w3.threads,
        concurrency: config.w3.concurrency,
      };
  }
}

/** Runs one task; a check that fails or a framework that throws gives `failed`, a missing store `unavailable`. */
export async function runTask(task: Task, config: BenchConfig, redisUrl: string): Promise<TaskResult> {
  const scratch = createScratch(redisUrl, taskId(task).replace(/[^a-z0-9]+/gi, '-'));
  const started = performance.now();
  const cpu = cpuSnapshot();
  const load = () => {
    const value = otherLoad(cpu);
    return value === undefined ? {} : { otherLoad: value };
  };
  const ok = () => ({ status: 'ok' as const, seconds: (performance.now() - started) / 1000, ...load() });
  try {
    switch (task.kind) {
      case 'w1': {
        const measured = await runW1(task, config, scratch);
        return { ...(emptyResult(task, config, ok()) as W1Result), ...measured };
      }
      case 'w1-redis-round-trips': {
        const counts = await runW1RoundTrips(config, scratch);
        return { ...(emptyResult(task, config, ok()) as W1RoundTripResult), counts };
      }
      case 'w1-postgres-round-trips': {
        const measured = await runW1PostgresRoundTrips(config, scratch);
        return { ...(emptyResult(task, config, ok()) as W1PostgresRoundTripResult), ...measured };
      }
      case 'w2': {
        const measured = await runW2(task, config, scratch);
        return { ...(emptyResult(task, config, ok()) as W2Result), ...measured };
      }
      case 'w3': {
        const measured = await runW3(task.store, config, scratch);
        return { ...(emptyResult(task, config, ok()) as W3Result), ...measured };
      }
    }
  } catch (error) {
    const unavailable = error instanceof Unavailable;
    const reason = unavailable
      ? (error as Error).message
      : ((error as Error).stack ?? String(error)).split('\n').slice(0, 8).join('\n');
    return emptyResult(task, config, {
      status: unavailable ? 'unavailable' : 'failed',
      reason,
      seconds: (performance.now() - started) / 1000,
      ...load(),
    });
  } finally {
    await scratch.dispose();
  }
}

/**
 * Every task of a benchmark run with these frameworks, in order. `traced`: with W1 of Lunation traced (no store
 * and SQLite, every run; the workspace run, whose install has `@lunation/otel` and the OpenTelemetry SDK).
 */
export function allTasks(frameworks: readonly FrameworkId[], options: { traced?: boolean } = {}): Task[] {
  const tasks: Task[] = [];
  const has = (framework: FrameworkId) => frameworks.includes(framework);
  const w1 = (framework: FrameworkId, modes: Array<'generate' | 'stream'>, stores: StoreKind[]) => {
    if (!has(framework)) return;
    for (const mode of modes) for (const store of stores) tasks.push({ kind: 'w1', framework, mode, store });
  };
  w1('bare', ['generate', 'stream'], ['none']);
  w1('lunation', ['generate', 'stream'], ['none', 'memory', 'sqlite', 'redis', 'postgres', 'postgres-async']);
  if (has('lunation') && options.traced) {
    for (const store of ['none', 'sqlite'] as const)
      tasks.push({ kind: 'w1', framework: 'lunation', mode: 'generate', store, traced: true });
  }
  w1('ai-sdk', ['generate', 'stream'], ['none']);
  w1('langgraph', ['generate'], ['none', 'memory', 'sqlite']);
  w1('langgraph', ['stream'], ['none']);
  w1('openai-agents', ['generate', 'stream'], ['none']);
  w1('mastra', ['generate', 'stream'], ['none']);
  if (has('lunation')) tasks.push({ kind: 'w1-redis-round-trips' }, { kind: 'w1-postgres-round-trips' });
  for (const framework of ['bare', 'lunation', 'ai-sdk', 'langgraph', 'openai-agents', 'mastra'] as const) {
    if (has(framework)) tasks.push({ kind: 'w2', framework, mode: 'generate' });
  }
  if (has('lunation')) {
    tasks.push({ kind: 'w2', framework: 'lunation', mode: 'stream' });
    for (const store of ['sqlite', 'redis', 'postgres', 'postgres-async'] as const) {
      tasks.push({ kind: 'w2', framework: 'lunation', mode: 'generate', store });
    }
    tasks.push({ kind: 'w3', store: 'sqlite' }, { kind: 'w3', store: 'redis' });
    tasks.push({ kind: 'w3', store: 'postgres' }, { kind: 'w3', store: 'postgres-async' });
  }
  return tasks;
}
