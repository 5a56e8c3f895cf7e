import type { AgentEvent, LunationStore, RunEventRecord } from '@lunation/contract';
import { createRuntime, defineTool, permissionPlugin } from '@lunation/runtime';
import { ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { AgentWorker, FleetClient, LocalDispatchBackend, LocalDispatcher } from '../src/index.js';

const executions: string[] = [];

const note = defineTool({
  name: 'note',
  description: 'Writes a note',
  input: z.object({ text: z.string() }),
  execute: ({ text }, context) => {
    executions.push(`note ${text} ${context.idempotencyKey}`);
    return `noted ${text}`;
  },
});

const slow = defineTool({
  name: 'slow',
  description: 'Waits until cancelled',
  input: z.object({}),
  execute: async (_, context) => {
    executions.push(`slow ${context.idempotencyKey}`);
    await new Promise((_resolve, reject) => {
      context.signal.addEventListener('abort', () => reject(context.signal.reason), { once: true });
    });
  },
});

/** Answers from the conversation alone, so any worker continues the same script. */
function scripted(steps: (text: string) => ScriptedResponse[]) {
  return new ScriptedModel((request) => {
    const firstUser = request.messages.find((message) => message.role === 'user');
    const text = firstUser?.content[0]?.type === 'text' ? firstUser.content[0].text : '';
    const answered = request.messages.filter((message) => message.role === 'tool').length;
    return steps(text)[answered] ?? { text: `done: ${text}` };
  });
}

const model = scripted((text) => {
  if (text.startsWith('note '))
    return [{ toolCalls: [{ toolName: 'note', arguments: { text: text.slice(5) } }] }];
  if (text === 'slow') return [{ toolCalls: [{ toolName: 'slow', arguments: {} }] }];
  return [];
});

function workerRuntime(store: LunationStore) {
  return createRuntime()
    .model('m', model)
    .agent({
      id: 'a',
      model: 'm',
      tools: [note, slow],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'note', decision: 'ask' }] } }],
    })
    .store(store)
    .options({ leaseTtlMs: 2_000 })
    .build();
}

const workers: AgentWorker[] = [];
const dispatchers: LocalDispatcher[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ deadlineMs: 2_000 })));
  await Promise.all(dispatchers.splice(0).map((dispatcher) => dispatcher.close()));
  executions.length = 0;
});

/** A store, a dispatcher backend, `count` workers on them and a client, as separate processes would have. */
function fleet(count = 1, store: LunationStore = new MemoryStore()) {
  const backend = new LocalDispatchBackend();
  const dispatcher = () => {
    const created = new LocalDispatcher({ backend });
    dispatchers.push(created);
    return created;
  };
  for (let index = 0; index < count; index++) {
    const worker = new AgentWorker({
      runtime: workerRuntime(store),
      dispatcher: dispatcher(),
      workerId: `worker-${index}`,
      idleWaitMs: 50,
      claimLockMs: 3_000,
    }).start();
    workers.push(worker);
  }
  return { store, client: new FleetClient({ dispatcher: dispatcher(), store }) };
}

async function follow(client: FleetClient, runId: string, after?: string): Promise<RunEventRecord[]> {
  const records: RunEventRecord[] = [];
  const signal = AbortSignal.timeout(10_000);
  for await (const record of client.events(runId, { signal, ...(after ? { after } : {}) }))
    records.push(record);
  return records;
}

const types = (records: RunEventRecord[]) => records.map((record) => record.event.type);
const runEnd = (records: RunEventRecord[]) =>
  records.at(-1)?.event as Extract<AgentEvent, { type: 'run-end' }> | undefined;

describe('a fleet: clients submit, workers run, events cross over', () => {
  it('runs submitted input on a worker and streams its events to the client, in order with increasing ids', async () => {
    const { client, store } = fleet();
    const { runId } = await client.send({ threadId: 't1', input: 'hello' });
    const records = await follow(client, runId);
    expect(types(records)[0]).toBe('run-start');
    expect(runEnd(records)).toMatchObject({ type: 'run-end', status: 'done' });
    const ids = records.map((record) => Number(record.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect((await store.getRun(runId))?.status).toBe('done');
    expect((await store.listMessages('t1')).map((record) => record.message.role)).toEqual([
      'user',
      'assistant',
    ]);
  });

  it('suspends for an approval and resumes the same run on decisions submitted through another client', async () => {
    const { client, store } = fleet(2);
    const { runId } = await client.send({ threadId: 't2', input: 'note milk' });
    const first = await follow(client, runId);
    const waiting = runEnd(first);
    expect(waiting).toMatchObject({ status: 'waiting' });
    const ticket = waiting?.openTickets[0];
    expect(ticket?.toolName).toBe('note');
    expect(executions).toEqual([]);

    const other = new FleetClient({ dispatcher: dispatchers[0] as LocalDispatcher, store });
    const resumed = await other.decide('t2', [
      { decisionId: 'd1', ticketId: ticket?.id ?? '', action: 'resume' },
    ]);
    expect(resumed.runId).toBe(runId);
    const second = await follow(other, runId, first.at(-1)?.id);
    expect(runEnd(second)).toMatchObject({ status: 'done' });
    expect(Number(second[0]?.id)).toBeGreaterThan(Number(first.at(-1)?.id));
    expect(executions).toEqual([expect.stringMatching(new RegExp(`^note milk ${runId}:lc_`))]);
  });

  it('cancels a running run from a client: the worker running it stops it, and it is checkpointed', async () => {
    const { client, store } = fleet();
    const { runId } = await client.send({ threadId: 't3', input: 'slow' });
    const records: RunEventRecord[] = [];
    for await (const record of client.events(runId, { signal: AbortSignal.timeout(10_000) })) {
      records.push(record);
      if (record.event.type === 'tool-execution-start') await client.cancel('t3', { reason: 'stop it' });
    }
    expect(runEnd(records)).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
    expect((await store.getRun(runId))?.termination).toMatchObject({ type: 'cancelled' });
    // The worker clears the request after the run's log ended: the client may see the end first.
    await vi.waitFor(async () => expect(await dispatchers[0]?.cancelRequests('t3')).toEqual([]), {
      timeout: 5_000,
    });
  });

  it('a client that stops following only detaches: the run goes on and can be followed again', async () => {
    const { client, store } = fleet();
    const { runId } = await client.send({ threadId: 't4', input: 'note eggs' });
    const detach = new AbortController();
    const seen: RunEventRecord[] = [];
    for await (const record of client.events(runId, { signal: detach.signal })) {
      seen.push(record);
      detach.abort();
    }
    expect(seen).toHaveLength(1);
    const rest = await follow(client, runId, seen[0]?.id);
    expect(runEnd(rest)).toMatchObject({ status: 'waiting' });
    expect((await store.getRun(runId))?.status).toBe('waiting');
  });

  it("runs claimed work through its runtime's executor: the run is that runtime's active run, cancellable there", async () => {
    const store = new MemoryStore();
    const runtime = workerRuntime(store);
    const dispatcher = new LocalDispatcher();
    dispatchers.push(dispatcher);
    workers.push(new AgentWorker({ runtime, dispatcher, workerId: 'worker-x', idleWaitMs: 50 }).start());
    const client = new FleetClient({ dispatcher, store });
    const { runId } = await client.send({ threadId: 't-exec', input: 'slow' });
    const records: RunEventRecord[] = [];
    for await (const record of client.events(runId, { signal: AbortSignal.timeout(10_000) })) {
      records.push(record);
      if (record.event.type === 'tool-execution-start') {
        expect(runtime.activeRun('t-exec')?.runId).toBe(runId);
        expect(runtime.cancel(runId, 'stopped in process')).toBe(true);
      }
    }
    expect(runEnd(records)).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
    expect(runtime.activeRuns()).toEqual([]);
  });

  it('applies a thread submissions in order, one run after another', async () => {
    const { client, store } = fleet(3);
    const runs = [];
    for (const text of ['one', 'two', 'three']) runs.push(await client.send({ threadId: 't5', input: text }));
    for (const { runId } of runs)
      expect(runEnd(await follow(client, runId))).toMatchObject({ status: 'done' });
    const texts = (await store.listMessages('t5')).map((record) => {
      const part = record.message.content[0];
      return part?.type === 'text' ? part.text : '';
    });
    expect(texts).toEqual(['one', 'done: one', 'two', 'done: one', 'three', 'done: one']);
  });

  it('does not apply input twice when its run is already in the store (a worker died before acknowledging it)', async () => {
    const { client, store } = fleet();
    const first = await client.send({ threadId: 't6', input: 'hello' });
    await follow(client, first.runId);
    // The same submission delivered again under a new id, as after a worker crash: the run exists, so nothing runs.
    const again = await client.send({ threadId: 't6', input: 'hello', runId: first.runId });
    const later = await client.send({ threadId: 't6', input: 'bye' });
    await follow(client, later.runId);
    expect(again.runId).toBe(first.runId);
    expect((await store.listMessages('t6')).map((record) => record.message.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
  });

  it("gives a run's log the committed step and the ending the store has when its worker died between the last commit and the append", async () => {
    const { client, store } = fleet();
    // A worker ran the run to its suspension and died before its events reached the log or it acknowledged the
    // submission: the store has the waiting run, the log nothing, and the submission is delivered again.
    const runId = 'died-after-commit';
    const done = await workerRuntime(store).generate({ threadId: 't8', input: 'note tea', runId });
    expect(done.status).toBe('waiting');
    await client.send({ threadId: 't8', input: 'note tea', runId });
    const records = await follow(client, runId);
    expect(types(records)).toEqual(['step-start', 'tool-call-start', 'tool-call-end', 'step-end', 'run-end']);
    expect(runEnd(records)).toMatchObject({ status: 'waiting', openTickets: done.openTickets });
    expect((await store.listMessages('t8')).filter((record) => record.message.role === 'user')).toHaveLength(
      1,
    );
    expect(executions).toEqual([]);
  });

  it('hands a thread back while another process holds its lease, and runs it once the lease is free', async () => {
    const { client, store } = fleet();
    const elsewhere = workerRuntime(store);
    const busy = await elsewhere.run({ threadId: 't7', input: 'slow' });
    const { runId } = await client.send({ threadId: 't7', input: 'hello' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await store.getRun(runId)).toBeUndefined();
    busy.cancel('make room');
    await busy.result;
    expect(runEnd(await follow(client, runId))).toMatchObject({ status: 'done' });
  });
});
