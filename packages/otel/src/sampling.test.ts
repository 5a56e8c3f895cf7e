import { MemoryStore } from '@lunation/store-memory';
import type { Attributes } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { echoRuntime } from './__fixtures__/echo-runtime.js';
import { openTelemetryInstrumentation } from './index.js';

describe('sampling', () => {
  it('of a dropped run: it runs as usual and records nothing', async () => {
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
    const runtime = echoRuntime(openTelemetryInstrumentation({ tracerProvider }), new MemoryStore());
    const result = await runtime.generate({ threadId: 't', input: 'say hi' });
    expect(result.finalText).toBe('said hi');
    await tracerProvider.forceFlush();
    expect(exporter.getFinishedSpans()).toEqual([]);
    // Only the run's span was asked for: an unsampled run's model calls and tools start no span at all.
    expect(decisions).toEqual(['invoke_agent a']);
  });

  it('gets what a sampler decides on when a span starts, the other attributes when it ends', async () => {
    const exporter = new InMemorySpanExporter();
    const seen = new Map<string, Attributes>();
    const on = new AlwaysOnSampler();
    const tracerProvider = new TracerProvider({
      sampler: {
        shouldSample: (_context, _traceId, name, _kind, attributes) => {
          seen.set(name, { ...attributes });
          return on.shouldSample();
        },
        toString: () => 'recording AlwaysOn',
      },
      spanProcessors: [new SimpleSpanProcessor({ exporter })],
    });
    const runtime = echoRuntime(openTelemetryInstrumentation({ tracerProvider }));
    await runtime.generate({ threadId: 't', input: 'say hi' });
    await tracerProvider.forceFlush();
    // The GenAI conventions' sampling-relevant attributes (operation, provider, model) are there from the start;
    // a run's span also names its agent. The rest comes with the span's end (the SDK validates it once).
    expect(seen.get('invoke_agent a')).toEqual({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.agent.id': 'a',
      'gen_ai.agent.name': 'a',
      'gen_ai.request.model': 'scripted',
    });
    expect(seen.get('chat scripted')).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.request.model': 'scripted',
    });
    expect(seen.get('execute_tool echo')).toEqual({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'echo',
    });
    const run = exporter.getFinishedSpans().find((span) => span.name === 'invoke_agent a');
    expect(run?.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.id': 'a',
      'gen_ai.conversation.id': 't',
      'lunation.run.id': expect.any(String),
      'lunation.run.origin': expect.any(String),
      'lunation.run.resumed': false,
      'lunation.run.status': 'done',
    });
    const tool = exporter.getFinishedSpans().find((span) => span.name === 'execute_tool echo');
    expect(tool?.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'echo',
      'gen_ai.tool.call.id': expect.any(String),
      'gen_ai.tool.type': 'function',
      'gen_ai.conversation.id': 't',
      'lunation.tool.status': 'succeeded',
    });
  });
});
