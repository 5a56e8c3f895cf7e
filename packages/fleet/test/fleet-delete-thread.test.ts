import { LunationError } from '@lunation/contract';
import { createRuntime, defineTool } from '@lunation/runtime';
import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { AgentWorker, FleetClient, LocalDispatcher } from '../src/index.js';

/**
 * Found by the simulator (runtime world, every fault: seeds 100, 316, 330, 374). A worker died after its run
 * finished and before it acknowledged the run's submission; the user saw the run done and deleted the thread
 * (the lease was free). The next worker found the submission still pending, looked for its run in the store —
 * gone with the thread — and applied it again from its input: every tool of the deleted run ran a second time.
 * `FleetClient.deleteThread` refuses while the thread's inbox holds submissions.
 */
describe('FleetClient.deleteThread', () => {
  it('refuses while a submission is not acknowledged, so a deleted run never runs again', async () => {
    const store = new MemoryStore();
    const dispatcher = new LocalDispatcher();
    const charged: string[] = [];
    const charge = defineTool({
      name: 'charge',
      description: 'Charges',
      input: z.object({}),
      execute: (_input, context) => {
        charged.push(context.identity.runId);
        return 'charged';
      },
    });
    const runtime = () =>
      createRuntime()
        .model('m', new ScriptedModel([callTool('charge', {}), reply('Charged.')]))
        .agent({ id: 'a', model: 'm', tools: [charge] })
        .store(store)
        .build();
    // What a worker that died before acknowledging leaves: the run done in the store, its submission pending.
    const input = { id: 'm1', role: 'user' as const, content: [{ type: 'text' as const, text: 'charge' }] };
    await (await runtime().run({ threadId: 't', runId: 'r1', input: [input] })).result;
    await dispatcher.submit({
      id: 's1',
      threadId: 't',
      request: { type: 'input', input: [input], runId: 'r1' },
    });
    expect(charged).toEqual(['r1']);

    const client = new FleetClient({ dispatcher, store });
    const refused = await client.deleteThread('t').catch((error: unknown) => error);
    expect(LunationError.hasCode(refused, 'thread-busy')).toBe(true);
    expect((await store.getRun('r1'))?.status).toBe('done');

    // A worker finds the run applied and acknowledges the submission; then the thread can go, and nothing reruns.
    const worker = new AgentWorker({ runtime: runtime(), dispatcher, workerId: 'w', idleWaitMs: 20 }).start();
    for (let attempt = 0; (await dispatcher.pending('t')).length > 0 && attempt < 200; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(await client.deleteThread('t')).toBe(true);
    expect(await client.deleteThread('t')).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await worker.stop();
    await dispatcher.close();
    expect(await store.getThread('t')).toBeUndefined();
    expect(charged).toEqual(['r1']);
  });

  // Found by the 1,000,000-seed simulator run (runtime world, every fault: seeds 211089, 214740; and 7226 of
  // `stalls`): a worker holding a duplicate delivery of a thread's first submission applied it after the user had
  // deleted the thread; it found no thread and created it again, running the deleted run from its input.
  it('drops a submission delivered after its thread was deleted: a worker never creates a thread', async () => {
    const store = new MemoryStore();
    const dispatcher = new LocalDispatcher();
    const runtime = createRuntime()
      .model('m', new ScriptedModel([reply('Hello.')]))
      .agent({ id: 'a', model: 'm' })
      .store(store)
      .build();
    const client = new FleetClient({ dispatcher, store });
    const { runId } = await client.send({ threadId: 't', input: 'hi', resourceId: 'alice' });
    // The front created the thread as it submitted.
    expect((await store.getThread('t'))?.resourceId).toBe('alice');
    // What a late delivery meets: the submission still to apply, the thread deleted meanwhile.
    await store.deleteThread('t');
    const rejected: string[] = [];
    const worker = new AgentWorker({
      runtime,
      dispatcher,
      workerId: 'w',
      idleWaitMs: 20,
      onRejected: (entry, error) => rejected.push(`${entry.id}: ${error.code}`),
    }).start();
    for (let attempt = 0; (await dispatcher.pending('t')).length > 0 && attempt < 200; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await worker.stop();
    expect(await dispatcher.pending('t')).toEqual([]);
    await dispatcher.close();
    expect(rejected).toHaveLength(1);
    expect(rejected[0]).toMatch(/: not-found$/);
    expect(await store.getThread('t')).toBeUndefined();
    expect(await store.getRun(runId)).toBeUndefined();
  });

  it('refuses while a worker holds the thread, and deletes another owner’s thread for nobody', async () => {
    const store = new MemoryStore();
    const dispatcher = new LocalDispatcher();
    const client = new FleetClient({ dispatcher, store });
    await store.createThread({ id: 't', resourceId: 'alice' });
    await store.acquireLease({ threadId: 't', owner: 'w', runId: 'r1', ttlMs: 60_000 });
    const busy = await client.deleteThread('t', { resourceId: 'alice' }).catch((error: unknown) => error);
    expect(LunationError.hasCode(busy, 'thread-busy')).toBe(true);
    const foreign = await client.deleteThread('t', { resourceId: 'bob' }).catch((error: unknown) => error);
    expect(LunationError.hasCode(foreign, 'not-found')).toBe(true);
    expect(await store.getThread('t')).toBeDefined();
    await dispatcher.close();
  });
});

// Found by the simulator (runtime world, every fault: seed 8894): a cancel naming a run of a thread deleted
// meanwhile answered `cancelled: true`, as for a run still queued; there is no such run to cancel.
describe('FleetClient.cancel of a run the store does not have', () => {
  it('answers cancelled: false unless the run is still queued in the inbox', async () => {
    const store = new MemoryStore();
    const dispatcher = new LocalDispatcher();
    const client = new FleetClient({ dispatcher, store });
    expect(await client.cancel('t', { runId: 'gone' })).toEqual({ cancelled: false, runId: 'gone' });
    expect(await dispatcher.cancelRequests('t')).toEqual([]);

    const input = [{ id: 'm1', role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }];
    await dispatcher.submit({ id: 's1', threadId: 't', request: { type: 'input', input, runId: 'queued' } });
    const queued = await client.cancel('t', { runId: 'queued' });
    expect(queued).toMatchObject({ cancelled: true, runId: 'queued' });
    expect((await dispatcher.cancelRequests('t')).map((request) => request.runId)).toEqual(['queued']);
    await dispatcher.close();
  });
});
