import type { BenchConfig } from '../config.js';
import { FRAMEWORKS } from '../frameworks/index.js';
import { createLunation } from '../frameworks/lunation.js';
import type { Harness } from '../harness.js';
import { fullGc, memory, type Timing, timeRuns } from '../measure.js';
import { checkRedis, commandCounts, commandDelta, RoundTripProxy } from '../redis.js';
import type { RoundTripCount, Task } from '../results.js';
import { expectToolExecutions, Script } from '../script.js';
import type { Scratch } from './scratch.js';

/** W1: sequential runs of S steps with an instant model; µs per run for each S. */
export async function runW1(
  task: Extract<Task, { kind: 'w1' }>,
  config: BenchConfig,
  scratch: Scratch,
): Promise<{ timings: Record<string, Timing>; retainedBytesPerRun: number }> {
  const create = await FRAMEWORKS[task.framework].load();
  const script = new Script(scratch.runPrefix);
  if (task.traced && task.framework !== 'lunation')
    throw new Error(`${task.framework} cannot be traced here`);
  // Imported only when asked for, so that the other tasks load neither @lunation/otel nor the SDK.
  const traceKit = task.traced ? await import('../tracing/sdk-tracing.js') : undefined;
  const tracing = traceKit?.benchTracing('every');
  const harness: Harness = await create({
    mode: task.mode,
    store: task.store,
    script,
    workDir: scratch.dir,
    redisUrl: scratch.redisUrl,
    redisKeyPrefix: `${scratch.prefix}:`,
    ...(tracing ? { instrumentation: tracing.instrumentation } : {}),
  });
  let spans = 0;
  try {
    const timings: Record<string, Timing> = {};
    fullGc();
    const heapBefore = memory().heapUsed;
    let runs = 0;
    for (const steps of config.w1.steps) {
      const before = script.toolExecutions;
      const timing = await timeRuns(() => harness.run(steps), config.w1.timing);
      expectToolExecutions(script, before, timing.totalRuns, steps);
      timings[String(steps)] = timing;
      runs += timing.totalRuns;
      if (traceKit) spans += timing.totalRuns * traceKit.spansPerRun(steps);
    }
    await tracing?.check(spans);
    if (script.openRuns !== 0) throw new Error(`${script.openRuns} runs were never checked`);
    fullGc();
    return { timings, retainedBytesPerRun: (memory().heapUsed - heapBefore) / runs };
  } finally {
    await harness.close();
    await tracing?.shutdown();
  }
}

/**
 * Redis round trips of Lunation's W1 (non-streaming, Redis store), counted by a TCP proxy between the store and
 * Redis; commands counted from `INFO commandstats` deltas on the server.
 */
export async function runW1RoundTrips(config: BenchConfig, scratch: Scratch): Promise<RoundTripCount[]> {
  await checkRedis(scratch.redisUrl);
  const proxy = await RoundTripProxy.start(scratch.redisUrl);
  const script = new Script(scratch.runPrefix);
  let harness: Harness | undefined;
  try {
    harness = await createLunation({
      mode: 'generate',
      store: 'redis',
      script,
      workDir: scratch.dir,
      redisUrl: proxy.url,
      redisKeyPrefix: `${scratch.prefix}:`,
    });
    const counts: RoundTripCount[] = [];
    for (const steps of config.w1.steps) {
      for (let index = 0; index < 3; index++) await harness.run(steps);
      const runs = config.w1.redisRoundTripRuns;
      const before = await commandCounts(scratch.redisUrl);
      proxy.reset();
      for (let index = 0; index < runs; index++) await harness.run(steps);
      const roundTrips = proxy.roundTrips;
      const commands = commandDelta(before, await commandCounts(scratch.redisUrl));
      const perRun: Record<string, number> = {};
      let total = 0;
      for (const [command, calls] of Object.entries(commands)) {
        perRun[command] = calls / runs;
        total += calls;
      }
      counts.push({
        steps,
        runs,
        roundTripsPerRun: roundTrips / runs,
        commandsPerRun: total / runs,
        commands: perRun,
      });
    }
    return counts;
  } finally {
    await harness?.close();
    await proxy.close();
  }
}
