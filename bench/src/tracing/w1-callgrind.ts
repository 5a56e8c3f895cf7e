/**
 * One process of the W1 tool loop (S = 10, non-streaming) with tracing off, on or sampled, for instruction counts
 * under valgrind's callgrind and for CPU time: after a warm-up it runs windows of runs and calls
 * `os.getPriority()` at each window's edge, where callgrind (`--dump-before=uv_os_getpriority`) dumps and zeroes
 * its counters, so each window is counted alone and start-up is in none. `scripts/tracing-callgrind.sh` runs the
 * variants side by side and prints instructions per step (see bench/tracing-notes.md).
 *
 * Usage: node --import tsx src/tracing/w1-callgrind.ts --store none|sqlite --tracing off|on|sampled|lean
 *   [--warmup 300] [--windows 200,200,200] [--lease-ttl-ms 600000] [--otel <dir>]
 * (`--otel`: load `@lunation/otel` from another build's `dist/` directory, to count two builds of it side by side).
 *
 * What it runs, truthfully: `@lunation/otel`'s `openTelemetryInstrumentation` on a real SDK tracer
 * (`@opentelemetry/sdk-trace`'s `TracerProvider`, a `BatchSpanProcessor` with its default settings) whose
 * exporter counts the spans it is given and drops them: the SDK's and Lunation's cost per span is counted, an
 * exporter's serialisation and network are not. `sampled`: `ParentBasedSampler` over
 * `TraceIdRatioBasedSampler(0.1)` (one run in ten recorded); `lean`: every run, `toolSpans: { minDurationMs: 5 }` (no
 * `execute_tool` span for W1's fast successful tool). It prints one JSON line: the spans exported and, per
 * window, its runs and CPU time (user + system; meaningless under valgrind, where the counts decide).
 */
import { getPriority } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import * as workspaceOtel from '@lunation/otel';
import { createLunation } from '../frameworks/lunation.js';
import type { StoreKind } from '../harness.js';
import { expectToolExecutions, Script } from '../script.js';
import { createScratch } from '../workloads/scratch.js';
import { benchTracing, spansPerRun } from './sdk-tracing.js';

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    tracing: { type: 'string', default: 'off' },
    warmup: { type: 'string', default: '300' },
    windows: { type: 'string', default: '200,200,200' },
    'lease-ttl-ms': { type: 'string' },
    otel: { type: 'string' },
  },
  strict: true,
});
const mode = values.tracing;
if (mode !== 'off' && mode !== 'on' && mode !== 'sampled' && mode !== 'lean')
  throw new Error(`--tracing must be off, on, sampled or lean, not ${mode}`);
const steps = 10;
const warmup = Number(values.warmup);
const windows = values.windows.split(',').map(Number);

const { openTelemetryInstrumentation } = (
  values.otel === undefined
    ? workspaceOtel
    : await import(pathToFileURL(join(resolve(values.otel), 'index.js')).href)
) as typeof workspaceOtel;
const tracing =
  mode === 'off' ? undefined : benchTracing(mode === 'on' ? 'every' : mode, openTelemetryInstrumentation);
const scratch = createScratch(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', `callgrind-${values.store}`);
const script = new Script(scratch.runPrefix);
const harness = await createLunation({
  mode: 'generate',
  store: values.store as StoreKind,
  script,
  workDir: scratch.dir,
  redisUrl: scratch.redisUrl,
  redisKeyPrefix: `${scratch.prefix}:`,
  ...(tracing === undefined ? {} : { instrumentation: tracing.instrumentation }),
  ...(values['lease-ttl-ms'] === undefined ? {} : { leaseTtlMs: Number(values['lease-ttl-ms']) }),
});
const measured: { runs: number; cpuUs: number }[] = [];
try {
  for (let run = 0; run < warmup; run++) await harness.run(steps);
  getPriority();
  for (const runs of windows) {
    const cpu = process.cpuUsage();
    for (let run = 0; run < runs; run++) await harness.run(steps);
    const used = process.cpuUsage(cpu);
    getPriority();
    measured.push({ runs, cpuUs: used.user + used.system });
  }
  const total = warmup + windows.reduce((sum, runs) => sum + runs, 0);
  expectToolExecutions(script, 0, total, steps);
  await tracing?.check(total * spansPerRun(steps, mode === 'lean' ? 'lean' : 'every'));
} finally {
  await harness.close();
  await scratch.dispose();
  await tracing?.shutdown();
}
console.log(
  JSON.stringify({
    store: values.store,
    tracing: mode,
    otel: values.otel ?? '@lunation/otel',
    steps,
    warmup,
    spans: tracing?.exporter.spans ?? 0,
    windows: measured.map(({ runs, cpuUs }) => ({ runs, cpuUs, cpuUsPerStep: cpuUs / (runs * steps) })),
  }),
);
