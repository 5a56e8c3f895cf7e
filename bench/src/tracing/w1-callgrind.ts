/**
 * One process of the W1 tool loop (S = 10, non-streaming) for instruction counts under valgrind's callgrind:
 * `scripts/tracing-callgrind.sh` runs it with tracing off and on, for two run counts each, and divides the
 * difference in instructions by the steps in between, so start-up cancels out (see bench/tracing-notes.md).
 *
 * Usage: node --import tsx src/tracing/w1-callgrind.ts --store sqlite --tracing off|on|sampled --runs 300
 * (`sampled`: one run in ten traced, `ParentBasedSampler` over `TraceIdRatioBasedSampler(0.1)`). Without valgrind
 * it prints the CPU time of the runs (user + system, after the harness was built).
 */
import { parseArgs } from 'node:util';
import { openTelemetryInstrumentation } from '@lunation/otel';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type SpanExporter,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { createLunation } from '../frameworks/lunation.js';
import type { StoreKind } from '../harness.js';
import { expectToolExecutions, Script } from '../script.js';
import { createScratch } from '../workloads/scratch.js';

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    tracing: { type: 'string', default: 'off' },
    runs: { type: 'string', default: '300' },
  },
  strict: true,
});
const steps = 10;
const runs = Number(values.runs);

/** Drops every span (counting them): what tracing costs the process, not the backend. */
class DroppingExporter implements SpanExporter {
  spans = 0;
  export(spans: ReadableSpan[], resultCallback: (result: { code: number }) => void): void {
    this.spans += spans.length;
    resultCallback({ code: 0 });
  }
  async shutdown(): Promise<void> {}
  async forceFlush(): Promise<void> {}
}

const exporter = new DroppingExporter();
const tracerProvider = new TracerProvider({
  ...(values.tracing === 'sampled'
    ? { sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.1) }) }
    : {}),
  spanProcessors: [new BatchSpanProcessor({ exporter })],
});
const scratch = createScratch(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', `callgrind-${values.store}`);
const script = new Script(scratch.runPrefix);
const harness = await createLunation({
  mode: 'generate',
  store: values.store as StoreKind,
  script,
  workDir: scratch.dir,
  redisUrl: scratch.redisUrl,
  redisKeyPrefix: `${scratch.prefix}:`,
  ...(values.tracing === 'off' ? {} : { instrumentation: openTelemetryInstrumentation({ tracerProvider }) }),
});
const cpuBefore = process.cpuUsage();
try {
  for (let run = 0; run < runs; run++) await harness.run(steps);
  expectToolExecutions(script, 0, runs, steps);
  await tracerProvider.forceFlush();
  if (values.tracing !== 'off' && exporter.spans === 0)
    throw new Error('Tracing was on but no span was exported');
} finally {
  await harness.close();
  await scratch.dispose();
  await tracerProvider.shutdown();
}
const cpu = process.cpuUsage(cpuBefore);
console.log(
  JSON.stringify({
    store: values.store,
    tracing: values.tracing,
    runs,
    steps,
    spans: exporter.spans,
    cpuUs: cpu.user + cpu.system,
  }),
);
