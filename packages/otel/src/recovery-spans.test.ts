import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Lease, LunationError, type LunationStore, type RenewLeaseInput } from '@lunation/contract';
import { createRuntime, defineTool } from '@lunation/runtime';
import { reply, ScriptedModel } from '@lunation/runtime/testing';
import { SqliteStore } from '@lunation/store-sqlite';
import { SpanStatusCode } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openTelemetryInstrumentation } from './index.js';

const directory = mkdtempSync(join(tmpdir(), 'lunation-otel-recovery-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function memoryTracing() {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  return { exporter, tracerProvider };
}

function named(spans: readonly ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((span) => span.name === name);
}

/** A store whose lease renewals do nothing: its process looks frozen to everyone else once the lease expires. */
function frozenRenewals(store: LunationStore): LunationStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'renewLease') {
        // Says it renewed, without writing anything: the lease runs out while this process still thinks it holds it.
        return async (input: RenewLeaseInput): Promise<Lease> => ({
          threadId: input.threadId,
          owner: 'frozen',
          runId: 'frozen',
          token: input.token,
          renewedAt: Date.now(),
          expiresAt: Date.now() + input.ttlMs,
        });
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function tools(charges: string[], hang: { forever: boolean; calls: number }) {
  return [
    defineTool({
      name: 'charge',
      description: 'Charges a card',
      input: z.object({ amount: z.number() }),
      execute: ({ amount }) => {
        charges.push(String(amount));
        return 'charged';
      },
    }),
    defineTool({
      name: 'ship',
      description: 'Ships the order',
      input: z.object({}),
      execute: () => {
        hang.calls++;
        return hang.forever ? new Promise<string>(() => {}) : 'shipped';
      },
    }),
  ];
}

describe('recovery spans', () => {
  it('shows a takeover, a ledger hit, a re-run with the same key, busy rejections and the fenced commit of the stale process', async () => {
    const path = join(directory, 'recovery.db');
    const charges: string[] = [];
    const hang = { forever: true, calls: 0 };

    // Process 1 charges, then hangs in `ship` and stops renewing its lease (as if frozen).
    const first = memoryTracing();
    const store1 = await SqliteStore.open({ path });
    const model1 = new ScriptedModel([
      {
        toolCalls: [
          { toolName: 'charge', arguments: { amount: 5 } },
          { toolName: 'ship', arguments: {} },
        ],
      },
    ]);
    const runtime1 = createRuntime()
      .model('m', model1)
      .agent({ id: 'shop', model: 'm', tools: tools(charges, hang), toolExecution: { cancelGraceMs: 20 } })
      .store(frozenRenewals(store1))
      .options({ leaseTtlMs: 5_000 })
      .instrumentation(
        openTelemetryInstrumentation({ tracerProvider: first.tracerProvider, checkpoints: 'spans' }),
      )
      .build();
    const stuck = await runtime1.run({ threadId: 't1', input: 'buy', stream: false });
    while (hang.calls === 0) await new Promise((resolve) => setTimeout(resolve, 5));

    // Process 2 waits for the thread (each attempt rejected as busy), then recovers the run.
    hang.forever = false;
    const second = memoryTracing();
    const store2 = await SqliteStore.open({ path });
    const runtime2 = createRuntime()
      .model('m', new ScriptedModel([reply('Charged and shipped.')]))
      .agent({ id: 'shop', model: 'm', tools: tools(charges, hang) })
      .store(store2)
      .instrumentation(
        openTelemetryInstrumentation({ tracerProvider: second.tracerProvider, checkpoints: 'spans' }),
      )
      .build();
    let rejections = 0;
    let recovered: Awaited<ReturnType<typeof runtime2.run>> | undefined;
    const deadline = Date.now() + 30_000;
    while (!recovered) {
      try {
        recovered = await runtime2.run({ threadId: 't1', stream: false });
      } catch (error) {
        if (!LunationError.hasCode(error, 'thread-busy') || Date.now() > deadline) throw error;
        rejections++;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    const done = await recovered.result;
    expect(done.finalText).toBe('Charged and shipped.');
    expect(charges).toEqual(['5']); // the ledger kept the finished charge from running again
    expect(hang.calls).toBe(2);

    // Process 1 wakes up: its last commit is fenced by the newer lease.
    stuck.cancel('woke up');
    const ended = await stuck.result;
    expect(ended.termination.type).toBe('error');
    await Promise.all([store1.close(), store2.close()]);
    await Promise.all([first.tracerProvider.forceFlush(), second.tracerProvider.forceFlush()]);

    const spans2 = second.exporter.getFinishedSpans();
    expect(rejections).toBeGreaterThan(0);
    const rejected = named(spans2, 'lunation.lease.rejected');
    expect(rejected).toHaveLength(rejections);
    expect(rejected[0]?.status.code).toBe(SpanStatusCode.ERROR);
    expect(rejected[0]?.attributes).toMatchObject({
      'lunation.thread.id': 't1',
      'error.type': 'thread-busy',
    });

    const [run2] = named(spans2, 'invoke_agent shop');
    expect(run2?.attributes).toMatchObject({ 'lunation.run.id': stuck.runId, 'lunation.run.resumed': true });
    expect(run2?.events.map((event) => event.name)).toEqual([
      'lunation.lease.acquire',
      'lunation.ledger.hit',
    ]);
    expect(run2?.events[0]?.attributes).toMatchObject({ 'lunation.lease.takeover': true });
    expect(run2?.events[1]?.attributes).toMatchObject({
      'gen_ai.tool.name': 'charge',
      'lunation.ledger.source': 'ledger',
    });
    expect(named(spans2, 'execute_tool charge')).toEqual([]);
    const [ship] = named(spans2, 'execute_tool ship');
    expect(ship?.attributes).toMatchObject({
      'lunation.tool.rerun': true,
      'lunation.tool.attempt': 2,
      'lunation.tool.idempotency_key': expect.stringMatching(new RegExp(`^${stuck.runId}:lc_`)),
      'lunation.tool.status': 'succeeded',
    });
    expect(ship?.events.map((event) => event.name)).toEqual(['lunation.ledger.rerun']);

    const spans1 = first.exporter.getFinishedSpans();
    const [firstShip] = named(spans1, 'execute_tool ship');
    // A first attempt carries neither attribute.
    expect(firstShip?.attributes['lunation.tool.rerun']).toBeUndefined();
    expect(firstShip?.attributes['lunation.tool.attempt']).toBeUndefined();
    const [fenced] = named(spans1, 'lunation.checkpoint run-end');
    expect(fenced?.status.code).toBe(SpanStatusCode.ERROR);
    expect(fenced?.attributes).toMatchObject({ 'lunation.lease.fenced': true, 'error.type': 'stale-lease' });
    expect(fenced?.events.map((event) => event.name)).toEqual(['lunation.lease.fenced', 'exception']);
    const [run1] = named(spans1, 'invoke_agent shop');
    expect(run1?.attributes).toMatchObject({
      'lunation.run.termination': 'error',
      'error.type': 'stale-lease',
    });
    expect(run1?.status.code).toBe(SpanStatusCode.ERROR);
  }, 60_000);
});
