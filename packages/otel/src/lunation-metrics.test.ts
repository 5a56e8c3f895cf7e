import { LocalDispatchBackend, LocalDispatcher } from '@lunation/fleet';
import { createRuntime, defineTool } from '@lunation/runtime';
import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { MemoryStore } from '@lunation/store-memory';
import { MeterProvider, type MetricData, MetricReader } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  combineInstrumentation,
  LunationMetrics,
  METER_NAME,
  METRICS,
  openTelemetryInstrumentation,
} from './index.js';

class TestReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

async function collect(reader: TestReader): Promise<Map<string, MetricData>> {
  const { resourceMetrics } = await reader.collect();
  const scope = resourceMetrics.scopeMetrics.find((each) => each.scope.name === METER_NAME);
  return new Map((scope?.metrics ?? []).map((metric) => [metric.descriptor.name, metric]));
}

function points(metric: MetricData | undefined) {
  return (metric?.dataPoints ?? []).map((point) => ({ attributes: point.attributes, value: point.value }));
}

const weather = defineTool({
  name: 'weather',
  description: 'The weather in a city',
  input: z.object({ city: z.string() }),
  execute: ({ city }) => `Sunny in ${city}`,
});

describe('LunationMetrics', () => {
  it('records the GenAI client metrics of every model call and counts active runs', async () => {
    const reader = new TestReader();
    const meterProvider = new MeterProvider({ readers: [reader] });
    const model = new ScriptedModel([
      { ...callTool('weather', { city: 'Oslo' }), usage: { inputTokens: 10, outputTokens: 3 } },
      { ...reply('Sunny.'), usage: { inputTokens: 20, outputTokens: 5 } },
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'helper', model: 'm', tools: [weather] })
      .store(new MemoryStore())
      // Metrics beside tracing, as an app has them.
      .instrumentation(
        combineInstrumentation(openTelemetryInstrumentation(), new LunationMetrics({ meterProvider })),
      )
      .build();
    await runtime.generate({ threadId: 't1', input: 'Weather in Oslo?' });

    const metrics = await collect(reader);
    const duration = metrics.get(METRICS.operationDuration);
    expect(duration?.descriptor.unit).toBe('s');
    expect(duration?.dataPoints).toHaveLength(1);
    expect(duration?.dataPoints[0]?.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.request.model': 'scripted',
    });
    expect(duration?.dataPoints[0]?.value).toMatchObject({ count: 2 });
    const tokens = metrics.get(METRICS.tokenUsage)?.dataPoints ?? [];
    const sums = Object.fromEntries(
      tokens.map((point) => [point.attributes['gen_ai.token.type'], (point.value as { sum: number }).sum]),
    );
    expect(sums).toEqual({ input: 30, output: 8 });
    expect(points(metrics.get(METRICS.activeRuns))).toEqual([
      { attributes: { 'gen_ai.agent.id': 'helper' }, value: 0 },
    ]);
  });

  it("reads a dispatcher's depth per tenant and counts a worker's dead letters, failures and claim latency", async () => {
    const reader = new TestReader();
    const meterProvider = new MeterProvider({ readers: [reader] });
    const dispatcher = new LocalDispatcher({ backend: new LocalDispatchBackend() });
    const metrics = new LunationMetrics({ meterProvider, dispatcher });
    await dispatcher.submit({
      id: 's1',
      threadId: 'a',
      resourceId: 'acme',
      request: {
        type: 'input',
        input: [{ id: 'm1', role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      },
    });
    await dispatcher.submit({
      id: 's2',
      threadId: 'b',
      resourceId: 'acme',
      request: {
        type: 'input',
        input: [{ id: 'm1', role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      },
    });
    await dispatcher.submit({
      id: 's3',
      threadId: 'c',
      resourceId: 'globex',
      request: {
        type: 'input',
        input: [{ id: 'm1', role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      },
    });
    metrics.workerLog({ event: 'run-started', resourceId: 'acme', waitedMs: 250 });
    metrics.workerLog({ event: 'claim-dead-lettered', resourceId: 'acme' });
    metrics.workerLog({ event: 'event-append-failed' });
    metrics.workerLog({ event: 'event-append-failed' });
    metrics.workerLog({ event: 'lease-lost' });
    metrics.workerLog({ event: 'claim-taken' });

    const collected = await collect(reader);
    expect(points(collected.get(METRICS.queuePending))).toEqual([
      { attributes: {}, value: 3 },
      { attributes: { 'lunation.resource.id': 'acme' }, value: 2 },
      { attributes: { 'lunation.resource.id': 'globex' }, value: 1 },
    ]);
    expect(points(collected.get(METRICS.queueThreads))).toContainEqual({
      attributes: { 'lunation.dispatch.state': 'waiting' },
      value: 3,
    });
    expect(points(collected.get(METRICS.deadLetters))).toEqual([
      { attributes: { 'lunation.resource.id': 'acme' }, value: 1 },
    ]);
    expect(points(collected.get(METRICS.appendFailures))).toEqual([{ attributes: {}, value: 2 }]);
    expect(points(collected.get(METRICS.leasesLost))).toEqual([{ attributes: {}, value: 1 }]);
    const latency = collected.get(METRICS.claimLatency)?.dataPoints[0]?.value as {
      sum: number;
      count: number;
    };
    expect(latency).toMatchObject({ sum: 0.25, count: 1 });
    await dispatcher.close();
  });
});
