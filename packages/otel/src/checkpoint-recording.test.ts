import { type CheckpointCommit, LunationError, type LunationStore } from '@lunation/contract';
import { MemoryStore } from '@lunation/store-memory';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { echoRuntime } from './__fixtures__/echo-runtime.js';
import { type CheckpointRecording, openTelemetryInstrumentation } from './index.js';

/** A store whose commits of a run's end fail as a fenced write would (a newer lease holder exists). */
function fencedRunEnd(store: LunationStore): LunationStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'commit') {
        return (commit: CheckpointCommit) =>
          commit.run !== undefined && commit.run.status !== 'running'
            ? Promise.reject(new LunationError('stale-lease', 'a newer lease holder exists'))
            : target.commit(commit);
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** One two-step run (a tool call, then an answer) on a MemoryStore, traced with the given `checkpoints`. */
async function tracedRun(
  checkpoints: CheckpointRecording | undefined,
  store: LunationStore = new MemoryStore(),
) {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const runtime = echoRuntime(
    openTelemetryInstrumentation(
      checkpoints === undefined ? { tracerProvider } : { tracerProvider, checkpoints },
    ),
    store,
  );
  const result = await runtime.generate({ threadId: 't', input: 'say hi' });
  await tracerProvider.forceFlush();
  const spans = exporter.getFinishedSpans();
  const run = spans.find((span) => span.name === 'invoke_agent a');
  if (run === undefined) throw new Error('no invoke_agent span');
  return { result, spans, run };
}

describe('checkpoint commits', () => {
  it('are a count and a total latency on the run span by default, with no event or span per commit', async () => {
    const { spans, run } = await tracedRun(undefined);
    expect(spans.map((span) => span.name).sort()).toEqual([
      'chat scripted',
      'chat scripted',
      'execute_tool echo',
      'invoke_agent a',
    ]);
    expect(run.events.map((event) => event.name)).toEqual(['lunation.lease.acquire']);
    // C1 and C2 of the tool step, then the run's end.
    expect(run.attributes['lunation.run.checkpoints']).toBe(3);
    expect(run.attributes['lunation.run.checkpoint_duration_ms']).toBeGreaterThanOrEqual(0);
  });

  it("are an event of the run span each with checkpoints: 'events'", async () => {
    const { spans, run } = await tracedRun('events');
    expect(spans.filter((span) => span.name.startsWith('lunation.checkpoint'))).toEqual([]);
    const events = run.events.filter((event) => event.name === 'lunation.checkpoint');
    expect(events.map((event) => event.attributes?.['lunation.checkpoint.kind'])).toEqual([
      'C1',
      'C2',
      'run-end',
    ]);
    expect(events[0]?.attributes).toMatchObject({
      'lunation.checkpoint.messages': 2,
      'lunation.checkpoint.ledger_entries': 1,
      'lunation.checkpoint.run_record': true,
    });
    expect(events[0]?.attributes?.['lunation.checkpoint.duration_ms']).toBeGreaterThanOrEqual(0);
    expect(run.attributes['lunation.run.checkpoints']).toBe(3);
  });

  it("are spans under the run span with checkpoints: 'spans'", async () => {
    const { spans, run } = await tracedRun('spans');
    const checkpoints = spans.filter((span) => span.name.startsWith('lunation.checkpoint'));
    expect(checkpoints.map((span) => span.name)).toEqual([
      'lunation.checkpoint C1',
      'lunation.checkpoint C2',
      'lunation.checkpoint run-end',
    ]);
    for (const span of checkpoints) expect(span.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
    expect(run.events.map((event) => event.name)).toEqual(['lunation.lease.acquire']);
    expect(run.attributes['lunation.run.checkpoints']).toBe(3);
  });

  it('that fail are events of the run span in the default summary too', async () => {
    const { result, run } = await tracedRun(undefined, fencedRunEnd(new MemoryStore()));
    expect(result.termination).toMatchObject({ type: 'error', error: { code: 'stale-lease' } });
    expect(run.events.map((event) => event.name)).toEqual([
      'lunation.lease.acquire',
      'lunation.checkpoint',
      'lunation.lease.fenced',
    ]);
    expect(run.events[1]?.attributes).toMatchObject({
      'lunation.checkpoint.kind': 'run-end',
      'lunation.lease.fenced': true,
      'error.type': 'stale-lease',
    });
    expect(run.attributes['lunation.run.checkpoints']).toBe(3);
  });

  it('refuse an unknown recording with a typed error', () => {
    const wrong = 'timeline' as CheckpointRecording;
    expect(() => openTelemetryInstrumentation({ checkpoints: wrong })).toThrow(
      expect.objectContaining({ code: 'invalid-argument' }),
    );
  });
});
