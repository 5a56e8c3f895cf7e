import { createRuntime, defineTool } from '@lunation/runtime';
import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openTelemetryInstrumentation } from './index.js';

async function tracedRun(captureMessageContent: boolean | undefined) {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const weather = defineTool({
    name: 'weather',
    description: 'The weather of a city',
    input: z.object({ city: z.string() }),
    execute: ({ city }) => `Sunny in ${city}`,
  });
  const runtime = createRuntime()
    .model('m', new ScriptedModel([callTool('weather', { city: 'Oslo' }), reply('It is sunny.')]))
    .agent({ id: 'a', model: 'm', systemPrompt: 'Be brief.', tools: [weather] })
    .instrumentation(
      openTelemetryInstrumentation(
        captureMessageContent === undefined ? { tracerProvider } : { tracerProvider, captureMessageContent },
      ),
    )
    .build();
  await runtime.generate({ threadId: 't', input: 'Weather in Oslo?' });
  await tracerProvider.forceFlush();
  return exporter.getFinishedSpans();
}

describe('message contents', () => {
  it('are recorded only with captureMessageContent', async () => {
    for (const spans of [await tracedRun(undefined), await tracedRun(false)]) {
      const keys = spans.flatMap((span) => Object.keys(span.attributes));
      expect(keys.filter((key) => /^gen_ai\..*(messages|instructions|arguments|result)/.test(key))).toEqual(
        [],
      );
    }
    const spans = await tracedRun(true);
    const chats = spans.filter((span) => span.name === 'chat scripted');
    expect(chats).toHaveLength(2);
    const [first] = [...chats].sort(
      (a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1],
    );
    expect(JSON.parse(String(first?.attributes['gen_ai.system_instructions']))).toEqual([
      { type: 'text', content: 'Be brief.' },
    ]);
    expect(JSON.parse(String(first?.attributes['gen_ai.input.messages']))).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'Weather in Oslo?' }] },
    ]);
    expect(JSON.parse(String(first?.attributes['gen_ai.output.messages']))).toEqual([
      {
        role: 'assistant',
        parts: [{ type: 'tool_call', id: 'call_1_1', name: 'weather', arguments: '{"city":"Oslo"}' }],
      },
    ]);
    const tool = spans.find((span) => span.name === 'execute_tool weather');
    expect(tool?.attributes['gen_ai.tool.call.arguments']).toBe('{"city":"Oslo"}');
    expect(JSON.parse(String(tool?.attributes['gen_ai.tool.call.result']))).toMatchObject({
      status: 'success',
      data: 'Sunny in Oslo',
    });
    const run = spans.find((span) => span.name === 'invoke_agent a');
    expect(JSON.parse(String(run?.attributes['gen_ai.output.messages']))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'It is sunny.' }] },
    ]);
    // By default checkpoints are a summary on the run's span: without a store there is only the run's last one.
    expect(spans.filter((span) => span.name.startsWith('lunation.checkpoint'))).toEqual([]);
    expect(run?.events.filter((event) => event.name === 'lunation.checkpoint')).toEqual([]);
    expect(run?.attributes['lunation.run.checkpoints']).toBe(1);
  });
});
