import { LunationError, type LunationStore } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { createRuntime, defineTool } from '../src/index.js';
import { callTool, reply, ScriptedModel } from '../src/testing/index.js';

// A process can stop between its lease check and the tool's start, then enter the tool after another process took
// the thread over: only the effect's target can refuse that late effect, with the lease's fencing token, which the
// tool's context carries.

interface Seen {
  owner: string;
  fencingToken: number | undefined;
  leaseToken: number | undefined;
  rerun: boolean;
  idempotencyKey: string;
}

function runtimeOn(store: LunationStore, owner: string, seen: Seen[], hold?: Promise<void>) {
  const probe = defineTool({
    name: 'probe',
    description: 'Notes the token it runs under',
    input: z.object({}),
    execute: async (_, context) => {
      const lease = await store.getLease(context.identity.threadId);
      seen.push({
        owner,
        fencingToken: context.fencingToken,
        leaseToken: lease?.token,
        rerun: context.rerun,
        idempotencyKey: context.idempotencyKey,
      });
      // The first process stalls inside the call: its lease lapses and another process takes the thread over.
      if (hold) await hold;
      return 'probed';
    },
  });
  // From the conversation alone, so the successor goes on where the stalled process was.
  const model = new ScriptedModel((request) =>
    request.messages.some((message) => message.role === 'tool') ? reply('done') : callTool('probe', {}),
  );
  return createRuntime()
    .model('m', model)
    .agent({ id: 'a', model: 'm', tools: [probe] })
    .store(store)
    .options({ owner, leaseTtlMs: 300 })
    .build();
}

describe("a tool's fencing token", () => {
  it('is the token of the thread lease the call runs under', async () => {
    const store = new MemoryStore();
    const seen: Seen[] = [];
    const result = await (await runtimeOn(store, 'one', seen).run({ threadId: 't1', input: 'go' })).result;
    expect(result.status).toBe('done');
    expect(seen).toHaveLength(1);
    expect(seen[0]?.fencingToken).toBeTypeOf('number');
    expect(seen[0]?.fencingToken).toBe(seen[0]?.leaseToken);
  });

  it('is undefined when the runtime holds no lease (no store)', async () => {
    const seen: number[] = [];
    let calls = 0;
    const probe = defineTool({
      name: 'probe',
      description: 'Notes the token',
      input: z.object({}),
      execute: (_, context) => {
        calls++;
        if (context.fencingToken !== undefined) seen.push(context.fencingToken);
        return 'probed';
      },
    });
    const runtime = createRuntime()
      .model('m', new ScriptedModel([callTool('probe', {}), reply('done')]))
      .agent({ id: 'a', model: 'm', tools: [probe] })
      .build();
    await (await runtime.run({ threadId: 't2', input: 'go' })).result;
    expect(calls).toBe(1);
    expect(seen).toEqual([]);
  });

  it("is higher in the successor's re-run of a call after a takeover than in the stalled holder's", async () => {
    const store = new MemoryStore();
    const seen: Seen[] = [];
    // The stalled process: its renewals never reach the store, and its call does not return.
    let release: () => void = () => {};
    const hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    const stalling = new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        if (property === 'renewLease') return () => new Promise(() => {});
        return value.bind(target);
      },
    });
    const stalled = await runtimeOn(stalling, 'stalled', seen, hold).run({ threadId: 't3', input: 'go' });
    for (let tries = 0; tries < 200 && seen.length === 0; tries++) await new Promise((r) => setTimeout(r, 5));
    expect(seen).toHaveLength(1);

    // Another process takes the thread over once the lease lapsed and runs the call again.
    const successor = runtimeOn(store, 'successor', seen);
    let handle: Awaited<ReturnType<typeof successor.run>> | undefined;
    for (let tries = 0; tries < 200 && handle === undefined; tries++) {
      handle = await successor.run({ threadId: 't3' }).catch((error: unknown) => {
        if (LunationError.hasCode(error, 'thread-busy')) return undefined;
        throw error;
      });
      if (handle === undefined) await new Promise((r) => setTimeout(r, 25));
    }
    expect((await handle?.result)?.status).toBe('done');
    release();
    await stalled.result.catch(() => undefined);

    const [first, again] = seen;
    expect(seen.map((entry) => `${entry.owner} rerun=${entry.rerun}`)).toEqual([
      'stalled rerun=false',
      'successor rerun=true',
    ]);
    expect(again?.idempotencyKey).toBe(first?.idempotencyKey);
    expect(first?.fencingToken).toBe(first?.leaseToken);
    expect(again?.fencingToken).toBe(again?.leaseToken);
    expect(again?.fencingToken).toBeGreaterThan(first?.fencingToken ?? Number.POSITIVE_INFINITY);
  }, 30_000);
});
