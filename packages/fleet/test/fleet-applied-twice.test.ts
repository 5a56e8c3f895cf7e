import type {
  AgentEvent,
  CheckpointCommit,
  CheckpointResult,
  LunationStore,
  Message,
} from '@lunation/contract';
import { createRuntime, defineTool } from '@lunation/runtime';
import { ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { AgentWorker, FleetClient, LocalDispatchBackend, LocalDispatcher } from '../src/index.js';

/**
 * Issue #33: one run's history held the same assistant message twice. A worker stalled past its lease while its
 * commit of a submission's run was on the wire; the claim went to another worker, which found no run with the
 * submission's id (`ThreadWork.apply` reads `getRun` before it holds the thread's lease), then the stalled
 * worker's commit landed (its token was still the thread's latest, so the store rightly took it), and the
 * second worker took the lease, loaded the thread with that run in it, and applied the submission again: the
 * input and the model's (deterministic) answer are in the history twice.
 */

const ran: string[] = [];

const count = defineTool({
  name: 'count',
  description: 'Counts',
  input: z.object({ n: z.number() }),
  execute: ({ n }) => {
    ran.push(`count ${n}`);
    return n;
  },
});

/** Answers from the conversation alone, so any worker produces the same messages for the same step. */
const model = new ScriptedModel((request) => {
  const firstUser = request.messages.find((message) => message.role === 'user');
  const text = firstUser?.content[0]?.type === 'text' ? firstUser.content[0].text : '';
  const answered = request.messages.filter((message) => message.role === 'tool').length;
  const script: ScriptedResponse[] =
    text === 'count' ? [{ text: 'step 1', toolCalls: [{ toolName: 'count', arguments: { n: 1 } }] }] : [];
  return script[answered] ?? { text: `done: ${text}` };
});

function runtime(store: LunationStore, owner: string) {
  return createRuntime()
    .model('m', model)
    .agent({ id: 'a', model: 'm', tools: [count] })
    .store(store)
    .options({ leaseTtlMs: 2_000, owner })
    .build();
}

const workers: AgentWorker[] = [];
const dispatchers: LocalDispatcher[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ deadlineMs: 2_000 })));
  await Promise.all(dispatchers.splice(0).map((dispatcher) => dispatcher.close()));
  ran.length = 0;
});

/**
 * Two processes on one store. The first one's first commit of `threadId` waits on the wire until the other asks
 * for the thread's lease (after its `getRun` found no run). `finished`: the first process then finishes its run
 * and releases the thread before the other takes it (no lease expires). `stalled`: the first process stalls;
 * to the other (its clock a minute on) the first one's lease has expired.
 */
function twoProcesses(threadId: string, first: 'finished' | 'stalled') {
  const backend = MemoryStore.createBackend();
  const shared = new MemoryStore({ backend });
  let onWire: (() => Promise<void>) | undefined;
  let sent!: () => void;
  const commitSent = new Promise<void>((resolve) => {
    sent = resolve;
  });
  const stalledStore = new Proxy(shared, {
    get(target, key) {
      if (key === 'commit') {
        return (commit: CheckpointCommit): Promise<CheckpointResult> => {
          if (commit.threadId !== threadId || onWire !== undefined) return target.commit(commit);
          return new Promise<CheckpointResult>((resolve, reject) => {
            onWire = async () => {
              await target.commit(commit).then(resolve, reject);
            };
            sent();
          });
        };
      }
      const value = Reflect.get(target, key);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  let firstResult: Promise<unknown> | undefined;
  const later = first === 'stalled' ? new MemoryStore({ backend, now: () => Date.now() + 60_000 }) : shared;
  const nextStore = new Proxy(later, {
    get(target, key) {
      if (key === 'acquireLease') {
        return async (input: Parameters<LunationStore['acquireLease']>[0]) => {
          // The stalled worker's commit lands now: after this worker's getRun, before it takes the lease.
          if (input.threadId === threadId) {
            await onWire?.();
            if (first === 'finished') await firstResult;
          }
          return target.acquireLease(input);
        };
      }
      const value = Reflect.get(target, key);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });

  const dispatchBackend = new LocalDispatchBackend();
  const dispatcher = () => {
    const created = new LocalDispatcher({ backend: dispatchBackend });
    dispatchers.push(created);
    return created;
  };
  const client = new FleetClient({ dispatcher: dispatcher(), store: shared });
  const startNext = () => {
    const worker = new AgentWorker({
      runtime: runtime(nextStore, 'next'),
      dispatcher: dispatcher(),
      workerId: 'worker-next',
      idleWaitMs: 50,
      claimLockMs: 3_000,
    });
    workers.push(worker);
    worker.start();
  };
  const stalled = runtime(stalledStore, 'first');
  const startFirst = async (options: { input: string; runId: string }) => {
    const handle = await stalled.run({ threadId, ...options });
    firstResult = handle.result;
    await commitSent;
    return handle;
  };
  return { store: shared, client, startFirst, startNext };
}

async function runEnd(client: FleetClient, runId: string) {
  const signal = AbortSignal.timeout(10_000);
  for await (const record of client.events(runId, { signal })) {
    if (record.event.type === 'run-end') return record.event as Extract<AgentEvent, { type: 'run-end' }>;
  }
  return undefined;
}

function transcript(messages: Message[]): string[] {
  return messages.map((message) => {
    const text = message.content.map((part) => (part.type === 'text' ? part.text : part.type)).join(' ');
    return `${message.role}: ${text}`;
  });
}

async function history(store: LunationStore, threadId: string): Promise<string[]> {
  return transcript((await store.listMessages(threadId)).map((record) => record.message));
}

// Both failed before `startRun` checked, under the lease, that the run a submission names is not in the store yet
// (the worker's own check ran before it held the lease, so a stalled holder's late commit slipped in between).
describe('a submission whose run a stalled worker committed late', () => {
  it('is applied once: its input and answer are in the history once', async () => {
    const { store, client, startFirst, startNext } = twoProcesses('d1', 'finished');
    const { runId } = await client.send({ threadId: 'd1', input: 'hello', runId: 'r-d1' });
    // The first worker took the claim: its run's one commit (input, answer, run done) is on the wire. It
    // finishes and releases the thread normally; no lease expires.
    const first = await startFirst({ input: 'hello', runId });
    startNext();
    expect(await runEnd(client, runId)).toMatchObject({ status: 'done' });
    expect((await first.result).status).toBe('done');
    expect(await history(store, 'd1')).toEqual(['user: hello', 'assistant: done: hello']);
  });

  it('that is still running is continued, not given its input again', async () => {
    const { store, client, startFirst, startNext } = twoProcesses('d2', 'stalled');
    const { runId } = await client.send({ threadId: 'd2', input: 'count', runId: 'r-d2' });
    // The first worker's C1 (input, the step's assistant message, the call in flight) is on the wire when it
    // stalls past its lease; the commit lands with the thread's latest token, as the contract allows.
    const first = await startFirst({ input: 'count', runId });
    startNext();
    expect(await runEnd(client, runId)).toMatchObject({ status: 'done' });
    await first.result;
    const messages = await history(store, 'd2');
    expect(messages.filter((line) => line === 'user: count')).toHaveLength(1);
    expect(messages.filter((line) => line === 'assistant: step 1 tool-call')).toHaveLength(1);
  });
});
