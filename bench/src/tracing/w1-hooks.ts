/**
 * `@lunation/otel`'s hooks alone, without the runtime: the calls a W1 run (S = 10, a store, the default
 * `checkpoints: 'summary'`) makes into its instrumentation, replayed in a loop, against the bench's real SDK tracer
 * (`--tracer sdk`: `TracerProvider`, default `BatchSpanProcessor`, a dropping exporter) or against a tracer whose
 * spans record and keep nothing (`--tracer null`), so that what Lunation's own code costs (`null`) and what the SDK
 * adds (`sdk` − `null`) are counted apart. Like `w1-callgrind.ts` it runs a warm-up and then windows of runs,
 * calling `os.getPriority()` at each window's edge for callgrind (`--dump-before=uv_os_getpriority`), and prints
 * the CPU time per step of each window as JSON.
 *
 * Usage: node <compiled>/tracing/w1-hooks.js --tracer sdk|null [--warmup 2000] [--windows 5000,5000,5000]
 *   [--otel <dir>] (another build's `dist/` of `@lunation/otel`, to compare two builds of it)
 */
import { getPriority } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type {
  CheckpointKind,
  Instrumentation,
  Message,
  ModelCallOutcome,
  ModelRequest,
  RunStartFact,
  ToolCallOutcome,
} from '@lunation/contract';
import * as workspaceOtel from '@lunation/otel';
import {
  type Attributes,
  INVALID_SPAN_CONTEXT,
  type Span,
  type SpanContext,
  type SpanStatus,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { ADD_ARGUMENTS, ADD_DESCRIPTION, ADD_TOOL_NAME, FINAL_TEXT, USAGE } from '../script.js';
import { benchTracing } from './sdk-tracing.js';

const { values } = parseArgs({
  options: {
    tracer: { type: 'string', default: 'sdk' },
    warmup: { type: 'string', default: '2000' },
    windows: { type: 'string', default: '5000,5000,5000' },
    otel: { type: 'string' },
  },
  strict: true,
});
const steps = 10;

/** A span that is recording and keeps nothing: what the hooks cost without an SDK behind them. */
class NullSpan implements Span {
  spanContext(): SpanContext {
    return INVALID_SPAN_CONTEXT;
  }
  setAttribute(_key: string, _value: unknown): this {
    return this;
  }
  setAttributes(_attributes: Attributes): this {
    return this;
  }
  addEvent(): this {
    return this;
  }
  addLink(): this {
    return this;
  }
  addLinks(): this {
    return this;
  }
  setStatus(_status: SpanStatus): this {
    return this;
  }
  updateName(): this {
    return this;
  }
  end(): void {}
  isRecording(): boolean {
    return true;
  }
  recordException(): void {}
}

const nullSpan = new NullSpan();
const nullTracer: Tracer = {
  startSpan: () => nullSpan,
  startActiveSpan: (() => undefined) as unknown as Tracer['startActiveSpan'],
};
const nullProvider: TracerProvider = { getTracer: () => nullTracer };

const { openTelemetryInstrumentation } = (
  values.otel === undefined
    ? workspaceOtel
    : await import(pathToFileURL(join(resolve(values.otel), 'index.js')).href)
) as typeof workspaceOtel;
const sdk = values.tracer === 'sdk' ? benchTracing('every', openTelemetryInstrumentation) : undefined;
if (sdk === undefined && values.tracer !== 'null')
  throw new Error(`--tracer must be sdk or null, not ${values.tracer}`);
const instrumentation: Instrumentation =
  sdk?.instrumentation ?? openTelemetryInstrumentation({ tracerProvider: nullProvider });

const usage = { ...USAGE, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
const tools = [{ name: ADD_TOOL_NAME, description: ADD_DESCRIPTION, parameters: {} }];
const toolOutcome: ToolCallOutcome = { status: 'succeeded', result: { status: 'success', data: { sum: 3 } } };
const committed = { messages: 2, ledgerEntries: 1, runRecord: false };

/** One W1 run's calls into the instrumentation, as the runtime makes them. */
function run(index: number): void {
  const input: Message[] = [{ id: `u${index}`, role: 'user', content: [{ type: 'text', text: 'add' }] }];
  const start: RunStartFact = {
    identity: { threadId: `t${index}`, runId: `r${index}`, agentId: 'a', origin: 'user' },
    provider: 'bench',
    model: 'scripted',
    resumed: false,
    input,
    lease: { token: 1, takeover: false },
  };
  const observed = instrumentation.runStarted(start);
  if (observed === undefined) throw new Error('runStarted returned no observer');
  commit(observed.checkpointStarted('C2'));
  for (let step = 1; step <= steps; step++) {
    const request: ModelRequest = { messages: input, tools, overrides: {} };
    const call = observed.modelCallStarted({ step, provider: 'bench', model: 'scripted', request });
    const last = step === steps;
    const outcome: ModelCallOutcome = {
      message: { id: `m${index}.${step}`, role: 'assistant', content: [] },
      stopReason: last ? 'end-turn' : 'tool-use',
      usage,
    };
    call?.end(outcome);
    if (last) break;
    commit(observed.checkpointStarted('C1'));
    const toolCallId = `lc_${index}_${step}`;
    const tool = observed.toolCallStarted({
      step,
      toolCallId,
      toolName: ADD_TOOL_NAME,
      arguments: ADD_ARGUMENTS,
      idempotencyKey: `r${index}:${toolCallId}`,
      rerun: false,
      attempt: 1,
    });
    tool?.end(toolOutcome);
    commit(observed.checkpointStarted('C2'));
  }
  commit(observed.checkpointStarted('run-end' satisfies CheckpointKind));
  observed.runEnded({
    status: 'done',
    termination: { type: 'natural-end' },
    steps,
    usage,
    finalText: FINAL_TEXT,
    openTickets: [],
  });
}

function commit(operation: { end(outcome: typeof committed): void } | undefined): void {
  operation?.end(committed);
}

/** Between runs the event loop turns, as it does between a runtime's runs (the batch processor exports then). */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const measured: { runs: number; cpuUs: number }[] = [];
let index = 0;
for (const end = Number(values.warmup); index < end; index++) {
  run(index);
  await turn();
}
getPriority();
for (const runs of values.windows.split(',').map(Number)) {
  const cpu = process.cpuUsage();
  for (let count = 0; count < runs; count++) {
    run(index++);
    await turn();
  }
  const used = process.cpuUsage(cpu);
  getPriority();
  measured.push({ runs, cpuUs: used.user + used.system });
}
await sdk?.check(index * (1 + steps + (steps - 1)));
await sdk?.shutdown();
console.log(
  JSON.stringify({
    tracer: values.tracer,
    otel: values.otel ?? '@lunation/otel',
    steps,
    windows: measured.map(({ runs, cpuUs }) => ({ runs, cpuUs, cpuUsPerStep: cpuUs / (runs * steps) })),
  }),
);
