import { LunationError, type LunationStore } from '@lunation/contract';
import { createRuntime, defineTool, permissionPlugin } from '@lunation/runtime';
import { runJournalOf } from '@lunation/runtime/internal';
import { ScriptedModel } from '@lunation/runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import {
  AgentWorker,
  FleetClient,
  LocalDispatchBackend,
  LocalDispatcher,
  type WorkerLogEntry,
} from '../src/index.js';

const note = defineTool({
  name: 'note',
  description: 'Writes a note',
  input: z.object({ text: z.string() }),
  execute: ({ text }) => `noted ${text}`,
});

const model = new ScriptedModel((request) => {
  const answered = request.messages.filter((message) => message.role === 'tool').length;
  const firstUser = request.messages.find((message) => message.role === 'user');
  const text = firstUser?.content[0]?.type === 'text' ? firstUser.content[0].text : '';
  if (text === 'note' && answered === 0)
    return { toolCalls: [{ toolName: 'note', arguments: { text: 'milk' } }] };
  return { text: 'done' };
});

function runtimeOn(store: LunationStore) {
  return createRuntime()
    .model('m', model)
    .agent({
      id: 'a',
      model: 'm',
      tools: [note],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'note', decision: 'ask' }] } }],
    })
    .store(store)
    .options({ leaseTtlMs: 2_000, owner: 'worker-owner' })
    .build();
}

const stops: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

function fleet(
  dispatcher: (backend: LocalDispatchBackend) => LocalDispatcher = (backend) =>
    new LocalDispatcher({ backend }),
) {
  const store = new MemoryStore();
  const backend = new LocalDispatchBackend();
  const entries: WorkerLogEntry[] = [];
  const workerDispatcher = dispatcher(backend);
  const clientDispatcher = new LocalDispatcher({ backend });
  const worker = new AgentWorker({
    runtime: runtimeOn(store),
    dispatcher: workerDispatcher,
    workerId: 'worker-1',
    idleWaitMs: 50,
    log: (entry) => entries.push(entry),
  }).start();
  stops.push(
    () => workerDispatcher.close(),
    () => clientDispatcher.close(),
    () => worker.stop({ deadlineMs: 2_000 }),
  );
  return { store, entries, client: new FleetClient({ dispatcher: clientDispatcher, store }) };
}

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('AgentWorker log', () => {
  it('says which worker claimed, started, resumed and ended a run, with the ids its journal (the timeline) shows', async () => {
    const { store, entries, client } = fleet();
    const { runId } = await client.send({ threadId: 't1', input: 'note' });
    await until(() => entries.some((entry) => entry.event === 'run-ended'));
    const ticket = (await store.getRun(runId))?.openTickets?.[0];
    expect(ticket).toBeDefined();
    await client.decide('t1', [{ decisionId: 'd1', ticketId: ticket?.id ?? '', action: 'resume' }]);
    await until(() => entries.filter((entry) => entry.event === 'run-ended').length === 2);
    await until(() => entries.filter((entry) => entry.event === 'claim-completed').length === 2);

    expect(
      entries.map(
        (entry) =>
          `${entry.event}${entry.how ? ` ${entry.how}` : ''}${entry.status ? ` ${entry.status}` : ''}`,
      ),
    ).toEqual([
      'claim-taken',
      'run-started started',
      'run-ended waiting',
      'claim-completed',
      'claim-taken',
      'run-started resumed',
      'run-ended done',
      'claim-completed',
    ]);
    const journal = runJournalOf((await store.getRun(runId))!, await store.listMessages('t1'));
    const runner = journal.at(-1)!;
    for (const entry of entries) {
      expect(entry).toMatchObject({
        workerId: 'worker-1',
        threadId: 't1',
        attempt: 1,
        owner: 'worker-owner',
      });
      expect(entry.incarnation).toBe(runner.incarnation);
      // An id of the runtime's IdSource (systemIds: the process's random prefix and a counter).
      expect(entry.incarnation).toMatch(/^[0-9a-z]{21}-[0-9a-z]+$/);
    }
    const runEntries = entries.filter((entry) => entry.event.startsWith('run-'));
    expect(runEntries.map((entry) => entry.runId)).toEqual([runId, runId, runId, runId]);
    expect(runEntries.map((entry) => entry.leaseToken)).toEqual([
      journal[0]?.token,
      journal[0]?.token,
      runner.token,
      runner.token,
    ]);
    expect(runEntries[0]?.waitedMs).toBeGreaterThanOrEqual(0);
    expect(entries[2]).toMatchObject({ termination: 'suspended', level: 'info' });
    expect(entries[6]).toMatchObject({ termination: 'natural-end', steps: expect.any(Number) });
  });

  it('reports a failed append (retried) and a claim dead-lettered, with its error', async () => {
    let appendFailures = 1;
    const { entries, client } = fleet((backend) => {
      const dispatcher = new LocalDispatcher({ backend, maxAttempts: 1 });
      const append = dispatcher.appendEvents.bind(dispatcher);
      dispatcher.appendEvents = (runId, events, options) => {
        if (appendFailures-- > 0) return Promise.reject(new Error('connection reset'));
        return append(runId, events, options);
      };
      const pending = dispatcher.pending.bind(dispatcher);
      dispatcher.pending = (threadId) => {
        if (threadId === 'broken') {
          return Promise.reject(new LunationError('internal', 'the inbox is unreadable'));
        }
        return pending(threadId);
      };
      return dispatcher;
    });
    await client.send({ threadId: 't2', input: 'hello' });
    await until(() => entries.some((entry) => entry.event === 'claim-completed'));
    expect(entries.filter((entry) => entry.event === 'event-append-failed')).toEqual([
      expect.objectContaining({
        level: 'warn',
        threadId: 't2',
        error: 'connection reset',
        runId: expect.any(String),
      }),
    ]);

    await client.send({ threadId: 'broken', input: 'hello' });
    await until(() => entries.some((entry) => entry.event === 'claim-dead-lettered'));
    expect(entries.find((entry) => entry.event === 'claim-dead-lettered')).toMatchObject({
      level: 'error',
      threadId: 'broken',
      attempt: 1,
      error: 'the inbox is unreadable',
      errorCode: 'internal',
      workerId: 'worker-1',
    });
  });

  it('says when it hands a thread back because another process holds its lease, and runs it once free', async () => {
    const { store, entries, client } = fleet();
    const held = await store.acquireLease({
      threadId: 't3',
      owner: 'elsewhere',
      runId: 'r-other',
      ttlMs: 30_000,
    });
    const { runId } = await client.send({ threadId: 't3', input: 'hello' });
    await until(() => entries.some((entry) => entry.event === 'claim-handed-back'));
    expect(entries.find((entry) => entry.event === 'claim-handed-back')).toMatchObject({
      level: 'info',
      threadId: 't3',
      workerId: 'worker-1',
      delayMs: expect.any(Number),
    });
    expect(entries.some((entry) => entry.event === 'run-started')).toBe(false);
    await store.releaseLease({ threadId: 't3', token: held.token });
    await until(() => entries.some((entry) => entry.event === 'run-ended'));
    expect(entries.find((entry) => entry.event === 'run-ended')).toMatchObject({ runId, status: 'done' });
  });
});
