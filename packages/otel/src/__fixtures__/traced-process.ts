/**
 * One process of the cross-process test: `suspend` runs an agent on a SQLite file until it waits for an
 * approval; `resume` approves it and finishes. Either prints its finished spans as one JSON line and exits.
 */
import { openTelemetryInstrumentation } from '@lunation/otel';
import { createRuntime, defineTool, permissionPlugin } from '@lunation/runtime';
import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { SqliteStore } from '@lunation/store-sqlite';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { z } from 'zod';

const [phase, path] = process.argv.slice(2) as ['suspend' | 'resume', string];
const exporter = new InMemorySpanExporter();
const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
const store = await SqliteStore.open({ path });
const model = new ScriptedModel(
  phase === 'suspend' ? [callTool('delete_file', { path: 'old.log' })] : [reply('Deleted old.log.')],
);
const runtime = createRuntime()
  .model('m', model)
  .agent({
    id: 'janitor',
    model: 'm',
    tools: [
      defineTool({
        name: 'delete_file',
        description: 'Deletes a file',
        input: z.object({ path: z.string() }),
        execute: ({ path: file }) => `deleted ${file}`,
      }),
    ],
    plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'delete_*', decision: 'ask' }] } }],
  })
  .store(store)
  .instrumentation(openTelemetryInstrumentation({ tracerProvider }))
  .build();

let result: { runId: string; status: string; ticketId?: string };
if (phase === 'suspend') {
  const waiting = await runtime.generate({ threadId: 't', input: 'Clean up old.log' });
  result = { runId: waiting.identity.runId, status: waiting.status, ticketId: waiting.openTickets[0]?.id };
} else {
  const ticketId = process.argv[4] as string;
  const outcome = await runtime.sendDecisions('t', [{ decisionId: 'd1', ticketId, action: 'resume' }]);
  const done = await outcome.run?.result;
  result = { runId: done?.identity.runId ?? '', status: done?.status ?? 'none' };
}
await store.close();
await tracerProvider.forceFlush();
const spans = exporter.getFinishedSpans().map((span) => ({
  name: span.name,
  traceId: span.spanContext().traceId,
  spanId: span.spanContext().spanId,
  parentSpanId: span.parentSpanContext?.spanId,
  links: span.links.map((link) => ({ ...link.context, attributes: link.attributes })),
  runId: span.attributes['lunation.run.id'],
  events: span.events.map((event) => event.name),
}));
process.stdout.write(`${JSON.stringify({ pid: process.pid, result, spans })}\n`);
