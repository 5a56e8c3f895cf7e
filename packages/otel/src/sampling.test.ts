import { createRuntime, defineTool } from '@lunation/runtime';
import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { MemoryStore } from '@lunation/store-memory';
import {
  AlwaysOffSampler,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openTelemetryInstrumentation } from './index.js';

describe('an unsampled run', () => {
  it('runs as usual and records nothing', async () => {
    const exporter = new InMemorySpanExporter();
    const decisions: string[] = [];
    const off = new AlwaysOffSampler();
    const tracerProvider = new TracerProvider({
      sampler: {
        shouldSample: (...args) => {
          decisions.push(args[2]);
          return off.shouldSample();
        },
        toString: () => 'counting AlwaysOff',
      },
      spanProcessors: [new SimpleSpanProcessor({ exporter })],
    });
    const echo = defineTool({
      name: 'echo',
      description: 'Echoes',
      input: z.object({ text: z.string() }),
      execute: ({ text }) => text,
    });
    const runtime = createRuntime()
      .model('m', new ScriptedModel([callTool('echo', { text: 'hi' }), reply('said hi')]))
      .agent({ id: 'a', model: 'm', tools: [echo] })
      .store(new MemoryStore())
      .instrumentation(openTelemetryInstrumentation({ tracerProvider }))
      .build();
    const result = await runtime.generate({ threadId: 't', input: 'say hi' });
    expect(result.finalText).toBe('said hi');
    await tracerProvider.forceFlush();
    expect(exporter.getFinishedSpans()).toEqual([]);
    // Only the run's span was asked for: an unsampled run's model calls and tools start no span at all.
    expect(decisions).toEqual(['invoke_agent a']);
  });
});
