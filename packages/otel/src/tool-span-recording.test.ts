import { createRuntime, defineTool } from '@lunation/runtime';
import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openTelemetryInstrumentation, type ToolSpanRecording } from './index.js';

/** How long the slow tool takes: longer than the threshold below, which the fast one never reaches. */
const SLOW_MS = 600;
const THRESHOLD_MS = 500;

/** One run whose first step calls a fast, a slow and a failing tool, traced with `toolSpans`. */
async function traced(toolSpans?: ToolSpanRecording) {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const input = z.object({});
  const tools = [
    defineTool({ name: 'fast', description: 'Answers at once', input, execute: () => 'ok' }),
    defineTool({
      name: 'slow',
      description: 'Takes a while',
      input,
      execute: () => new Promise<string>((resolve) => setTimeout(() => resolve('late'), SLOW_MS)),
    }),
    defineTool({
      name: 'failing',
      description: 'Fails',
      input,
      execute: () => {
        throw new Error('out of order');
      },
    }),
  ];
  const model = new ScriptedModel([
    {
      toolCalls: [
        { toolName: 'fast', arguments: {} },
        { toolName: 'slow', arguments: {} },
        { toolName: 'failing', arguments: {} },
      ],
    },
    reply('done'),
  ]);
  const runtime = createRuntime()
    .model('m', model)
    .agent({ id: 'a', model: 'm', tools })
    .instrumentation(openTelemetryInstrumentation({ tracerProvider, ...(toolSpans ? { toolSpans } : {}) }))
    .build();
  await runtime.generate({ threadId: 't', input: 'go' });
  await tracerProvider.forceFlush();
  return exporter.getFinishedSpans();
}

describe('toolSpans', () => {
  it('records every tool execution by default', async () => {
    const spans = await traced();
    const tools = spans.filter((span) => span.name.startsWith('execute_tool '));
    expect(tools.map((span) => span.name).sort()).toEqual([
      'execute_tool failing',
      'execute_tool fast',
      'execute_tool slow',
    ]);
    const run = spans.find((span) => span.name === 'invoke_agent a');
    expect(run?.attributes).not.toHaveProperty('lunation.run.tool_spans_skipped');
  });

  it('with { minDurationMs }, records only the failed and slow ones, timed from their start, and counts the rest', async () => {
    const spans = await traced({ minDurationMs: THRESHOLD_MS });
    const run = spans.find((span) => span.name === 'invoke_agent a');
    expect(run?.attributes['lunation.run.tool_spans_skipped']).toBe(1);
    const tools = spans.filter((span) => span.name.startsWith('execute_tool '));
    expect(tools.map((span) => span.name).sort()).toEqual(['execute_tool failing', 'execute_tool slow']);
    const slow = tools.find((span) => span.name === 'execute_tool slow');
    // Made when the call ended, the span still starts when the call did: it lasts the tool's sleep.
    const [seconds = 0, nanoseconds = 0] = slow?.duration ?? [];
    expect(seconds * 1000 + nanoseconds / 1e6).toBeGreaterThanOrEqual(SLOW_MS - 1);
    expect(slow?.parentSpanContext?.spanId).toBe(run?.spanContext().spanId);
    expect(slow?.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'slow',
      'gen_ai.tool.type': 'function',
      'gen_ai.tool.description': 'Takes a while',
      'gen_ai.conversation.id': 't',
      'lunation.tool.status': 'succeeded',
    });
    const failing = tools.find((span) => span.name === 'execute_tool failing');
    expect(failing?.status).toEqual({ code: 2, message: 'tool_error' });
    expect(failing?.attributes['error.type']).toBe('tool_error');
  });

  it('with { minDurationMs }, nests a child run of a call without a span under its parent run, in its trace', async () => {
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const runtime = createRuntime()
      .model(
        'boss-model',
        new ScriptedModel([callTool('agent_researcher', { task: 'capital?' }), reply('Paris')]),
      )
      .model('researcher-model', new ScriptedModel([reply('Paris')]))
      .agent({ id: 'boss', model: 'boss-model', delegates: ['researcher'] })
      .agent({ id: 'researcher', model: 'researcher-model', description: 'Finds facts.' })
      .instrumentation(openTelemetryInstrumentation({ tracerProvider, toolSpans: { minDurationMs: 60_000 } }))
      .build();
    await runtime.generate({ threadId: 't', input: 'go' });
    await tracerProvider.forceFlush();
    const spans = exporter.getFinishedSpans();
    const boss = spans.find((span) => span.name === 'invoke_agent boss');
    const child = spans.find((span) => span.name === 'invoke_agent researcher');
    expect(spans.filter((span) => span.name.startsWith('execute_tool '))).toEqual([]);
    expect(child?.parentSpanContext?.spanId).toBe(boss?.spanContext().spanId);
    expect(child?.spanContext().traceId).toBe(boss?.spanContext().traceId);
  });

  it('refuses a threshold that is not a duration with a typed error', () => {
    for (const wrong of [
      { minDurationMs: -1 },
      { minDurationMs: Number.NaN },
      'some',
    ] as ToolSpanRecording[]) {
      expect(() => openTelemetryInstrumentation({ toolSpans: wrong })).toThrow(
        expect.objectContaining({ code: 'invalid-argument' }),
      );
    }
  });
});
