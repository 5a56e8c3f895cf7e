import { getEventListeners } from 'node:events';
import { LunationError } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { createRuntime, defineTool } from '../src/index.js';
import { callTool, reply, ScriptedModel } from '../src/testing/index.js';

/** A tool that waits until released, to keep a run alive. */
function gate(name: string) {
  let open: () => void = () => {};
  let entered: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  const started = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const tool = defineTool({
    name,
    description: name,
    input: z.object({}),
    execute: async () => {
      entered();
      await opened;
      return 'ok';
    },
  });
  return { tool, started, open: () => open() };
}

describe('starting runs', () => {
  it("leaves no listener on the caller's signal once a run has ended", async () => {
    const model = new ScriptedModel(Array.from({ length: 20 }, () => reply('hi')));
    const runtime = createRuntime().model('m', model).agent({ id: 'a', model: 'm' }).build();
    const shutdown = new AbortController();
    for (let i = 0; i < 20; i++) {
      await runtime.generate({ threadId: `t${i}`, input: 'hello', signal: shutdown.signal });
    }
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
  });

  it("still cancels a live run when the caller's signal aborts", async () => {
    const { tool, started } = gate('wait');
    const model = new ScriptedModel([callTool('wait', {}), reply('never')]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [tool] })
      .build();
    const caller = new AbortController();
    const result = runtime.generate({ threadId: 't', input: 'go', signal: caller.signal });
    await started;
    caller.abort('stop');
    expect((await result).termination).toEqual({ type: 'cancelled', reason: 'stop' });
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });

  it('gives a run without buffering an empty event stream that ends with the run', async () => {
    const { tool, started, open } = gate('wait');
    const model = new ScriptedModel([callTool('wait', {}), reply('done')]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [tool] })
      .build();
    const handle = await runtime.run({ threadId: 't', input: 'go', stream: false });
    await started;
    const events: unknown[] = [];
    const consumed = (async () => {
      for await (const event of handle.events) events.push(event);
    })();
    open();
    expect((await handle.result).finalText).toBe('done');
    await consumed;
    expect(events).toEqual([]);
    const later: unknown[] = [];
    for await (const event of handle.events) later.push(event);
    expect(later).toEqual([]);
  });

  it('reports bad requests as rejections of run() and generate()', async () => {
    const runtime = createRuntime()
      .model('m', new ScriptedModel([reply('x')]))
      .agent({ id: 'a', model: 'm' })
      .build();
    await expect(runtime.run({ threadId: '', input: 'x' })).rejects.toThrow(/non-empty threadId/);
    await expect(runtime.generate({ threadId: 't' })).rejects.toThrow(/needs input/);
    await expect(runtime.generate({ threadId: 't', input: 'x', agentId: 'nobody' })).rejects.toThrow(
      /Unknown agent/,
    );
    // Nothing stays reserved after a refused start.
    expect(runtime.activeRuns()).toEqual([]);
    expect((await runtime.generate({ threadId: 't', input: 'x' })).finalText).toBe('x');
  });
});

describe('thread leases (with a store)', () => {
  it('renews every held lease from one ticker, and a failed renewal stops only that run, writing nothing', async () => {
    const store = new MemoryStore();
    const renewed: string[] = [];
    const renewLease = store.renewLease.bind(store);
    store.renewLease = async (input) => {
      renewed.push(input.threadId);
      if (input.threadId === 'lost') throw new LunationError('lease-lost', 'taken');
      return renewLease(input);
    };
    const kept = gate('keep');
    const lost = gate('lose');
    const model = new ScriptedModel((request) => {
      const text = JSON.stringify(request.messages);
      if (text.includes('"tool"')) return reply('finished');
      return callTool(text.includes('first') ? 'keep' : 'lose', {});
    });
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [kept.tool, lost.tool] })
      .store(store)
      .options({ leaseTtlMs: 1_500 })
      .build();
    const first = runtime.generate({ threadId: 'kept', input: 'first' });
    const second = runtime.generate({ threadId: 'lost', input: 'second' });
    await Promise.all([kept.started, lost.started]);
    const lostResult = await second;
    // The run stops where it is and leaves the store to whoever holds the thread now, as a crash would.
    expect(lostResult.status).toBe('running');
    expect(lostResult.termination).toMatchObject({ type: 'error', error: { code: 'lease-lost' } });
    expect(String((lostResult.termination as { error: { message: string } }).error.message)).toMatch(
      /Lost the lease of thread "lost": the store refused its renewal/,
    );
    expect((await store.getLatestRun('lost'))?.status).toBe('running');
    const ledger = await store.listToolExecutions(lostResult.identity.runId);
    expect(ledger.map((entry) => entry.status)).toEqual(['in-flight']);
    // The other run keeps its lease renewed well past its time to live, then ends normally.
    const keptRenewals = () => renewed.filter((threadId) => threadId === 'kept').length;
    for (const deadline = Date.now() + 20_000; keptRenewals() < 4 && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(keptRenewals()).toBeGreaterThanOrEqual(4);
    kept.open();
    lost.open();
    expect((await first).finalText).toBe('finished');
    expect(await store.getLease('kept')).toBeUndefined();
  });

  it('takes over a lease of its own owner only once the earlier life stopped renewing it', async () => {
    const clock = { now: Date.now() };
    const store = new MemoryStore({ now: () => clock.now });
    await store.createThread({ id: 't' });
    const earlier = { threadId: 't', runId: 'old', owner: 'server-1', incarnation: 'earlier-life' };
    await store.acquireLease({ ...earlier, ttlMs: 60_000 });
    const model = new ScriptedModel([reply('back')]);
    const build = (owner: string) =>
      createRuntime()
        .model('m', model)
        .agent({ id: 'a', model: 'm' })
        .store(store)
        .options({ owner, leaseTtlMs: 60_000 })
        .build();
    await expect(build('server-2').generate({ threadId: 't', input: 'x' })).rejects.toMatchObject({
      code: 'thread-busy',
    });
    // 44 s without a renewal: the holder may still be alive and count its lease fresh (for 45 s after a renewal
    // it confirmed), so no takeover; half the ttl (the store specification v1's rule) is long past.
    clock.now += 44_000;
    const busy = await build('server-1')
      .generate({ threadId: 't', input: 'x' })
      .catch((error: unknown) => error);
    expect(LunationError.hasCode(busy, 'thread-busy')).toBe(true);
    expect((busy as LunationError).message).toContain("another live process with this runtime's own owner");
    expect((busy as LunationError).details).toMatchObject({
      runId: 'old',
      owner: 'server-1',
      retryAfterMs: expect.any(Number),
    });
    clock.now += 1_000;
    expect((await build('server-1').generate({ threadId: 't', input: 'x' })).finalText).toBe('back');
    expect(await store.getLease('t')).toBeUndefined();
  });
});
