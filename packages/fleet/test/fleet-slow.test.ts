import type {
  AgentEvent,
  AppendEventsOptions,
  LunationStore,
  RunEventRecord,
  RunRecord,
} from '@lunation/contract';
import { LunationError } from '@lunation/contract';
import { createRuntime, defineTool, permissionPlugin } from '@lunation/runtime';
import { ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { AgentWorker, FleetClient, LocalDispatchBackend, LocalDispatcher } from '../src/index.js';

/**
 * The fleet when a process is slow, not dead: cancels that name their run, claims redelivered to a thread whose
 * run finished meanwhile, a worker stalled past its lease, event appends that fail for a while, dead letters.
 */

const started: string[] = [];

function busyWait(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // a stalled process: no timer, no I/O callback runs meanwhile
  }
}

const note = defineTool({
  name: 'note',
  description: 'Writes a note (gated)',
  input: z.object({ text: z.string() }),
  execute: ({ text }) => {
    started.push(`note ${text}`);
    return `noted ${text}`;
  },
});

const count = defineTool({
  name: 'count',
  description: 'Counts',
  input: z.object({ n: z.number() }),
  execute: ({ n }, context) => {
    started.push(`count ${n} rerun=${context.rerun}`);
    return n;
  },
});

const slow = defineTool({
  name: 'slow',
  description: 'Waits until cancelled',
  input: z.object({}),
  execute: async (_, context) => {
    started.push('slow');
    await new Promise((_resolve, reject) => {
      context.signal.addEventListener('abort', () => reject(context.signal.reason), { once: true });
    });
  },
});

const forbidden = defineTool({
  name: 'forbidden',
  description: 'Denied by the permission rules',
  input: z.object({}),
  execute: () => {
    started.push('forbidden');
    return 'should not run';
  },
});

/** Answers from the conversation alone, so any worker (or process) continues the same script. */
const model = new ScriptedModel((request) => {
  const firstUser = request.messages.find((message) => message.role === 'user');
  const text = firstUser?.content[0]?.type === 'text' ? firstUser.content[0].text : '';
  const answered = request.messages.filter((message) => message.role === 'tool').length;
  const script: ScriptedResponse[] = text.startsWith('note ')
    ? [{ toolCalls: [{ toolName: 'note', arguments: { text: text.slice(5) } }] }]
    : text === 'slow'
      ? [{ toolCalls: [{ toolName: 'slow', arguments: {} }] }]
      : text === 'forbidden and slow'
        ? [
            {
              toolCalls: [
                { toolName: 'forbidden', arguments: {} },
                { toolName: 'slow', arguments: {} },
              ],
            },
          ]
        : text === 'two notes'
          ? [
              {
                toolCalls: [
                  { toolName: 'note', arguments: { text: 'a' } },
                  { toolName: 'note', arguments: { text: 'b' } },
                ],
              },
            ]
          : text === 'count'
            ? [1, 2, 3].map((n) => ({
                text: `step ${n}`,
                toolCalls: [{ toolName: 'count', arguments: { n } }],
              }))
            : [];
  return script[answered] ?? { text: `done: ${text}` };
});

function workerRuntime(store: LunationStore, leaseTtlMs = 2_000) {
  return createRuntime()
    .model('m', model)
    .agent({
      id: 'a',
      model: 'm',
      tools: [note, slow, count, forbidden],
      plugins: [
        {
          plugin: permissionPlugin,
          config: {
            rules: [
              { tool: 'note', decision: 'ask' },
              { tool: 'forbidden', decision: 'deny' },
            ],
          },
        },
      ],
    })
    .store(store)
    .options({ leaseTtlMs })
    .build();
}

const workers: AgentWorker[] = [];
const dispatchers: LocalDispatcher[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ deadlineMs: 2_000 })));
  await Promise.all(dispatchers.splice(0).map((dispatcher) => dispatcher.close()));
  started.length = 0;
});

/** One worker and a client on a shared store and dispatcher backend; `wrap` changes the worker's dispatcher. */
function fleet(
  options: {
    store?: LunationStore;
    workerStore?: LunationStore;
    wrap?: (d: LocalDispatcher) => LocalDispatcher;
  } = {},
) {
  const store = options.store ?? new MemoryStore();
  const backend = new LocalDispatchBackend();
  const dispatcher = () => {
    const created = new LocalDispatcher({ backend });
    dispatchers.push(created);
    return created;
  };
  const own = dispatcher();
  const worker = new AgentWorker({
    runtime: workerRuntime(options.workerStore ?? store),
    dispatcher: options.wrap ? options.wrap(own) : own,
    workerId: 'worker-0',
    idleWaitMs: 50,
    claimLockMs: 3_000,
  });
  workers.push(worker);
  const admin = dispatcher();
  return { store, admin, worker, client: new FleetClient({ dispatcher: admin, store }) };
}

/** The run's events after `after` until its `run-end`, or until `until` says stop. */
async function follow(
  client: FleetClient,
  runId: string,
  after?: string,
  until?: (event: AgentEvent) => boolean,
): Promise<RunEventRecord[]> {
  const records: RunEventRecord[] = [];
  const signal = AbortSignal.timeout(10_000);
  for await (const record of client.events(runId, { signal, ...(after ? { after } : {}) })) {
    records.push(record);
    if (until?.(record.event)) break;
  }
  return records;
}

const runEnd = (records: RunEventRecord[]) =>
  records.at(-1)?.event as Extract<AgentEvent, { type: 'run-end' }> | undefined;

describe('cancels name their run', () => {
  it('answers that an ended run had ended, and a request left behind never cancels the next run', async () => {
    const { client, admin, worker } = fleet();
    worker.start();
    const first = await client.send({ threadId: 'c1', input: 'hello' });
    await follow(client, first.runId);
    expect(await client.cancel('c1')).toEqual({
      cancelled: false,
      runId: first.runId,
      termination: { type: 'natural-end' },
    });
    // A worker that died between the run's end and clearing its request leaves the request behind.
    await admin.requestCancel({ threadId: 'c1', runId: first.runId, reason: 'left behind' });
    const next = await client.send({ threadId: 'c1', input: 'again' });
    expect(runEnd(await follow(client, next.runId))).toMatchObject({
      status: 'done',
      termination: { type: 'natural-end' },
    });
  });

  it('cancels a submitted run before it starts: it ends cancelled and runs nothing', async () => {
    const { client, worker } = fleet();
    const { runId } = await client.send({ threadId: 'c4', input: 'slow' });
    expect(await client.cancel('c4')).toMatchObject({ cancelled: true, runId });
    worker.start();
    expect(runEnd(await follow(client, runId))).toMatchObject({ termination: { type: 'cancelled' } });
    expect(started).toEqual([]);
  });

  // Found by the simulator (seed 6827): the dispatcher kept one cancel request per thread, so a cancel of the
  // thread's earlier run replaced that of a queued run, which then ran (and its gated call on a later approval).
  it('cancels of two runs of one thread both hold: each run ends cancelled and runs nothing', async () => {
    const { client, store, worker, admin } = fleet();
    const first = await client.send({ threadId: 'c7', input: 'slow' });
    const second = await client.send({ threadId: 'c7', input: 'note milk' });
    expect(await client.cancel('c7', { runId: second.runId })).toMatchObject({ cancelled: true });
    expect(await client.cancel('c7', { runId: first.runId })).toMatchObject({ cancelled: true });
    worker.start();
    expect(runEnd(await follow(client, first.runId))).toMatchObject({ termination: { type: 'cancelled' } });
    expect(runEnd(await follow(client, second.runId))).toMatchObject({
      status: 'done',
      termination: { type: 'cancelled' },
    });
    expect((await store.getRun(second.runId))?.openTickets).toEqual([]);
    expect(started).toEqual([]);
    // Each request was cleared once its own run ended.
    await expect.poll(() => admin.cancelRequests('c7')).toEqual([]);
  });

  it('ends a run that waits for an approval durably: approving afterwards runs nothing', async () => {
    const { client, store, worker } = fleet();
    worker.start();
    const { runId } = await client.send({ threadId: 'c2', input: 'note milk' });
    const first = await follow(client, runId);
    const ticket = runEnd(first)?.openTickets[0];
    expect(ticket?.toolName).toBe('note');
    expect(await client.cancel('c2')).toMatchObject({ cancelled: true, runId });
    const rest = await follow(client, runId, first.at(-1)?.id);
    expect(runEnd(rest)).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
    expect((await store.getRun(runId))?.status).toBe('done');
    await expect(
      client.decide('c2', [{ decisionId: 'late', ticketId: ticket?.id ?? '', action: 'resume' }]),
    ).rejects.toMatchObject({ code: 'not-found' });
    expect(started).toEqual([]);
  });
  it('holds a cancel that reaches the worker as its run suspends: the run ends cancelled, its tickets declined', async () => {
    let runId = '';
    let filed = false;
    const wrap = (dispatcher: LocalDispatcher) =>
      new Proxy(dispatcher, {
        get(target, key) {
          if (key === 'appendEvents') {
            return async (id: string, events: readonly AgentEvent[], options?: AppendEventsOptions) => {
              const ids = await target.appendEvents(id, events, options);
              // The run's waiting end is committed and logged: now the user's Stop arrives.
              if (!filed && events.some((event) => event.type === 'run-end' && event.status === 'waiting')) {
                filed = true;
                await target.requestCancel({ threadId: 'c5', runId, reason: 'stop pressed' });
              }
              return ids;
            };
          }
          const value = Reflect.get(target, key);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const { client, store, worker } = fleet({ wrap });
    worker.start();
    ({ runId } = await client.send({ threadId: 'c5', input: 'note tea', runId: 'r-c5' }));
    const first = await follow(client, runId);
    expect(runEnd(first)).toMatchObject({ status: 'waiting' });
    const rest = await follow(client, runId, first.at(-1)?.id);
    expect(runEnd(rest)).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
    expect((await store.getRun(runId))?.openTickets).toEqual([]);
    expect(started).toEqual([]);
  });
});

describe('claims delivered again', () => {
  it('applies nothing for a run its previous holder finished meanwhile, and does not dead-letter the thread', async () => {
    const store = new MemoryStore();
    const elsewhere = workerRuntime(store);
    const holder = await elsewhere.run({ threadId: 'c3', input: 'slow' });
    // The worker reads the thread's run as running; its holder finishes it before the worker goes on.
    let finished = false;
    const workerStore = new Proxy(store, {
      get(target, key) {
        if (key === 'getLatestRun') {
          return async (threadId: string): Promise<RunRecord | undefined> => {
            const run = await target.getLatestRun(threadId);
            if (threadId === 'c3' && run?.status === 'running' && !finished) {
              finished = true;
              holder.cancel('finished elsewhere');
              await holder.result;
            }
            return run;
          };
        }
        const value = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const { client, admin, worker } = fleet({ store, workerStore });
    worker.start();
    const { runId } = await client.send({ threadId: 'c3', input: 'hello' });
    expect(runEnd(await follow(client, runId))).toMatchObject({ termination: { type: 'natural-end' } });
    expect(finished).toBe(true);
    expect((await admin.depth()).deadLettered).toBe(0);
    expect(await admin.deadLetters()).toEqual([]);
  });
});

describe('a worker stalled past its lease', () => {
  it('starts nothing more once it cannot show a fresh lease; the next holder runs the rest, each call once', async () => {
    const store = new MemoryStore();
    const stall = defineTool({
      name: 'stall',
      description: 'Blocks the process past its lease',
      input: z.object({}),
      execute: () => {
        started.push('stall');
        busyWait(450);
        return 'stalled';
      },
    });
    const after = defineTool({
      name: 'after',
      description: 'Runs after the stall',
      input: z.object({}),
      execute: (_, context) => {
        started.push(`after rerun=${context.rerun}`);
        return 'after';
      },
    });
    const twoCalls = new ScriptedModel((request) =>
      request.messages.some((message) => message.role === 'tool')
        ? { text: 'finished' }
        : {
            toolCalls: [
              { toolName: 'stall', arguments: {} },
              { toolName: 'after', arguments: {} },
            ],
          },
    );
    const build = (owner: string) =>
      createRuntime()
        .model('m', twoCalls)
        .agent({ id: 'a', model: 'm', tools: [stall, after] })
        .store(store)
        .options({ leaseTtlMs: 300, owner })
        .build();
    const stalled = await build('stalled').generate({ threadId: 's1', input: 'go' });
    expect(started).toEqual(['stall']);
    expect(stalled.status).toBe('running');
    expect(stalled.termination).toMatchObject({ type: 'error', error: { code: 'lease-lost' } });
    // Nothing was written after the stall: the store still says running, the second call in flight.
    expect((await store.getLatestRun('s1'))?.status).toBe('running');

    await new Promise((resolve) => setTimeout(resolve, 350));
    const next = await build('next').generate({ threadId: 's1' });
    expect(next).toMatchObject({ status: 'done', finalText: 'finished' });
    expect(started).toEqual(['stall', 'after rerun=true']);
  });
  it('keeps the result of a call that finished after the lease was lost: the next holder does not run it again', async () => {
    const store = new MemoryStore();
    const renewLease = store.renewLease.bind(store);
    store.renewLease = async (input) => {
      if (input.threadId === 's2') throw new LunationError('store-unavailable', 'renewal timed out');
      return renewLease(input);
    };
    const stubborn = defineTool({
      name: 'stubborn',
      description: 'Finishes whatever its signal says',
      input: z.object({}),
      execute: async () => {
        started.push('stubborn');
        await new Promise((resolve) => setTimeout(resolve, 200));
        return 'finished anyway';
      },
    });
    const once = new ScriptedModel((request) =>
      request.messages.some((message) => message.role === 'tool')
        ? { text: 'all done' }
        : { toolCalls: [{ toolName: 'stubborn', arguments: {} }] },
    );
    const build = (owner: string) =>
      createRuntime()
        .model('m', once)
        .agent({ id: 'a', model: 'm', tools: [stubborn], toolExecution: { cancelGraceMs: 1_000 } })
        .store(store)
        .options({ leaseTtlMs: 150, owner })
        .build();
    const lost = await build('lost').generate({ threadId: 's2', input: 'go' });
    expect(lost.status).toBe('running');
    const ledger = await store.listToolExecutions(lost.identity.runId);
    expect(ledger.map((entry) => [entry.status, entry.result?.data])).toEqual([
      ['completed', 'finished anyway'],
    ]);
    store.renewLease = renewLease;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await build('next').generate({ threadId: 's2' })).toMatchObject({
      status: 'done',
      finalText: 'all done',
    });
    expect(started).toEqual(['stubborn']);
  });
});

describe('a run fenced out at its last commit', () => {
  it('ends `running` (another process holds the thread), not `done` with an error its log would show as the end', async () => {
    const store = new MemoryStore();
    const commit = store.commit.bind(store);
    store.commit = async (input) => {
      if (input.run?.status === 'done')
        throw new LunationError('stale-lease', 'a newer lease holds the thread');
      return commit(input);
    };
    const result = await workerRuntime(store).generate({ threadId: 'f1', input: 'count' });
    expect(result.status).toBe('running');
    expect(result.termination).toMatchObject({ type: 'error', error: { code: 'stale-lease' } });
    expect((await store.getLatestRun('f1'))?.status).toBe('running');
  });
});

describe('event appends that fail for a while', () => {
  it("lose nothing: every committed step and result reaches the run's log once, in order", async () => {
    let calls = 0;
    const failures: string[] = [];
    const wrap = (dispatcher: LocalDispatcher) =>
      new Proxy(dispatcher, {
        get(target, key) {
          if (key === 'appendEvents') {
            return async (runId: string, events: readonly AgentEvent[], options?: AppendEventsOptions) => {
              calls++;
              if (calls === 2 || calls === 3) {
                failures.push('before');
                throw new LunationError('store-unavailable', 'the log timed out');
              }
              const ids = await target.appendEvents(runId, events, options);
              if (calls === 4) {
                // Applied, but the answer was lost: the retry must not append the events twice.
                failures.push(`after ${events.length}`);
                throw new LunationError('store-unavailable', 'the answer was lost');
              }
              return ids;
            };
          }
          const value = Reflect.get(target, key);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const { client, store, worker, admin } = fleet({ wrap });
    worker.start();
    const { runId } = await client.send({ threadId: 'e1', input: 'count' });
    await follow(client, runId);
    await worker.stop();
    // The whole log, also past its first run-end.
    const records = (await admin.readEvents(runId, { limit: 10_000 })).events;
    expect(failures.map((failure) => failure.split(' ')[0])).toEqual(['before', 'before', 'after']);
    expect(runEnd(records)).toMatchObject({ status: 'done', termination: { type: 'natural-end' } });
    const events = records.map((record) => record.event);
    const results = events.filter((event) => event.type === 'tool-result');
    expect(results.map((event) => (event.type === 'tool-result' ? event.result.data : undefined))).toEqual([
      1, 2, 3,
    ]);
    const stepEnds = events.filter((event) => event.type === 'step-end');
    expect(stepEnds.map((event) => (event.type === 'step-end' ? event.step : 0))).toEqual([1, 2, 3, 4]);
    expect(events.filter((event) => event.type === 'run-start')).toHaveLength(1);
    // Each event once: the log numbers the run's events 0, 1, 2, … with none repeated.
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    const ids = records.map((record) => Number(record.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect(started).toEqual(['count 1 rerun=false', 'count 2 rerun=false', 'count 3 rerun=false']);
    expect((await store.getRun(runId))?.status).toBe('done');
  });
});

describe('dead letters', () => {
  it('answers a message to a dead-lettered thread with a clear error, keeping it for a resubmit', async () => {
    const { client, admin, worker } = fleet();
    await client.send({ threadId: 'd1', input: 'hello' });
    const claim = await admin.claim({ workerId: 'broken', waitMs: 1_000 });
    expect(claim?.threadId).toBe('d1');
    await admin.fail(claim!, new LunationError('internal', 'a bug'), { retryable: false });
    await expect(client.send({ threadId: 'd1', input: 'anyone?' })).rejects.toMatchObject({
      code: 'dead-lettered',
    });
    const kept = await admin.pending('d1');
    expect(kept).toHaveLength(2);
    const last = kept[1];
    const runId = last?.request.type === 'input' ? last.request.runId : undefined;
    expect(await admin.resubmit('d1')).toBe(true);
    worker.start();
    expect(runEnd(await follow(client, runId ?? ''))).toMatchObject({ termination: { type: 'natural-end' } });
  });
});

describe('stranded runs', () => {
  it('finds a run left running with nothing to continue it, and continues it', async () => {
    const store = new MemoryStore();
    const renewLease = store.renewLease.bind(store);
    // A process whose renewals fail stops its run where it is: `running`, its lease released, no job anywhere.
    store.renewLease = async (input) => {
      if (input.threadId === 'x1') throw new LunationError('store-unavailable', 'renewal timed out');
      return renewLease(input);
    };
    const died = await workerRuntime(store, 150).generate({ threadId: 'x1', input: 'slow' });
    expect(died.status).toBe('running');
    store.renewLease = renewLease;
    expect((await store.getLatestRun('x1'))?.status).toBe('running');

    const { client, worker } = fleet({ store });
    worker.start();
    const { runId } = died.identity;
    const records = await follow(client, runId, undefined, (event) => event.type === 'tool-execution-start');
    // The log first gets what the store committed (the step that called `slow`), then the continued run.
    expect(records.map((record) => record.event.type).slice(0, 5)).toEqual([
      'step-start',
      'tool-call-start',
      'tool-call-end',
      'step-end',
      'run-start',
    ]);
    expect(records.at(-1)?.event).toMatchObject({ type: 'tool-execution-start', rerun: true });
    expect(started).toEqual(['slow', 'slow']);
    expect(await worker.resumeStrandedRuns()).toEqual([]);
    expect(await client.cancel('x1')).toMatchObject({ cancelled: true, runId });
    expect(runEnd(await follow(client, runId, records.at(-1)?.id))).toMatchObject({
      termination: { type: 'cancelled' },
    });
  });
});

describe('the stranded-runs scan of a large store', () => {
  it('finds a stranded run on any thread of a store larger than one scan: each scan goes on where the last stopped', async () => {
    // The 2,000-run fleet test left a run stranded on a thread past the first 1,000 (the scan's limit): every scan
    // read the same oldest threads and never reached it.
    const store = new MemoryStore();
    for (const id of ['old-1', 'old-2', 'old-3', 'old-4']) await store.createThread({ id });
    const renewLease = store.renewLease.bind(store);
    store.renewLease = async (input) => {
      if (input.threadId === 'x3') throw new LunationError('store-unavailable', 'renewal timed out');
      return renewLease(input);
    };
    const died = await workerRuntime(store, 150).generate({ threadId: 'x3', input: 'slow' });
    expect(died.status).toBe('running');
    store.renewLease = renewLease;
    const dispatcher = new LocalDispatcher({ backend: new LocalDispatchBackend() });
    dispatchers.push(dispatcher);
    const worker = new AgentWorker({
      runtime: workerRuntime(store),
      dispatcher,
      workerId: 'scanner',
      strandedScanIntervalMs: 0,
      strandedScanLimit: 2,
    });
    const scans = [];
    for (let scan = 0; scan < 4; scan++) scans.push(await worker.resumeStrandedRuns());
    // Threads old-1, old-2 | old-3, old-4 | x3 (the end: the next scan starts over) | old-1, old-2.
    expect(scans).toEqual([[], [], ['x3'], []]);
    expect(await dispatcher.pending('x3')).toMatchObject([
      { request: { type: 'continue', runId: died.identity.runId } },
    ]);
  });
});

describe('a run continued from the store', () => {
  it('gives its log the results its dead worker settled but never logged (a denial in the open step)', async () => {
    const store = new MemoryStore();
    const renewLease = store.renewLease.bind(store);
    store.renewLease = async (input) => {
      if (input.threadId === 'x2') throw new LunationError('store-unavailable', 'renewal timed out');
      return renewLease(input);
    };
    // Its events went nowhere: a worker that died before any of them reached the log.
    const died = await workerRuntime(store, 150).generate({ threadId: 'x2', input: 'forbidden and slow' });
    expect(died.status).toBe('running');
    store.renewLease = renewLease;

    const { client, worker } = fleet({ store });
    worker.start();
    const { runId } = died.identity;
    const records = await follow(client, runId, undefined, (event) => event.type === 'tool-execution-start');
    const results = records.filter((record) => record.event.type === 'tool-result');
    expect(results.map((record) => record.event.type === 'tool-result' && record.event.toolName)).toEqual([
      'forbidden',
    ]);
    expect(started).toEqual(['slow', 'slow']);
    expect(await client.cancel('x2')).toMatchObject({ cancelled: true, runId });
    const rest = await follow(client, runId, records.at(-1)?.id);
    expect(runEnd(rest)).toMatchObject({ termination: { type: 'cancelled' } });
  });
});

describe('a run cancelled with a call still waiting for its decision', () => {
  it('tells its events of the result it gives that call, as the stored history has it', async () => {
    const twoCalls = new ScriptedModel((request) =>
      request.messages.some((message) => message.role === 'tool')
        ? { text: 'never' }
        : {
            toolCalls: [
              { toolName: 'note', arguments: { text: 'x' } },
              { toolName: 'slow', arguments: {} },
            ],
          },
    );
    const runtime = createRuntime()
      .model('m', twoCalls)
      .agent({
        id: 'a',
        model: 'm',
        tools: [note, slow],
        toolExecution: { mode: 'parallel' },
        plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'note', decision: 'ask' }] } }],
      })
      .store(new MemoryStore())
      .build();
    const run = await runtime.run({ threadId: 'w1', input: 'go' });
    const seen: AgentEvent[] = [];
    for await (const event of run.events) {
      seen.push(event);
      if (event.type === 'tool-execution-start') run.cancel('stop pressed');
    }
    expect((await run.result).termination).toMatchObject({ type: 'cancelled' });
    const results = seen.flatMap((event) => (event.type === 'tool-result' ? [event.toolName] : []));
    expect(results.sort()).toEqual(['note', 'slow']);
  });
});

describe('a worker that hears of a cancel late', () => {
  it('still ends the waiting run it names when an approval reaches it first: nothing runs', async () => {
    // A dispatcher whose cancel watch tells nothing (a notification lost or late): only a read can know.
    const deaf = (dispatcher: LocalDispatcher) =>
      new Proxy(dispatcher, {
        get(target, key) {
          if (key === 'watchCancel') return async () => ({ close() {} });
          const value = Reflect.get(target, key);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const { client, store, admin, worker } = fleet({ wrap: deaf });
    worker.start();
    const { runId } = await client.send({ threadId: 'c6', input: 'note tea' });
    const first = await follow(client, runId);
    const ticket = runEnd(first)?.openTickets[0];
    await worker.stop();
    // The user pressed Stop (the request names the run), then an approval arrived before the cancel's own.
    await admin.requestCancel({ threadId: 'c6', runId, reason: 'stop pressed' });
    await client.decide('c6', [{ decisionId: 'yes', ticketId: ticket?.id ?? '', action: 'resume' }]);
    const again = new AgentWorker({ runtime: workerRuntime(store), dispatcher: deaf(admin), idleWaitMs: 50 });
    workers.push(again);
    again.start();
    expect(runEnd(await follow(client, runId, first.at(-1)?.id))).toMatchObject({
      termination: { type: 'cancelled' },
    });
    expect(started).toEqual([]);
  });
});

describe('a claim lost as the work ends', () => {
  it('is not a failure: the thread is not dead-lettered and its next message runs', async () => {
    let lost = false;
    const wrap = (dispatcher: LocalDispatcher) =>
      new Proxy(dispatcher, {
        get(target, key) {
          if (key === 'complete') {
            return async (claim: Parameters<LocalDispatcher['complete']>[0]) => {
              if (!lost) {
                lost = true; // the claim's lock lapsed while the worker was slow: completing it says so
                throw new LunationError(
                  'claim-lost',
                  `The claim of thread "${claim.threadId}" is no longer held`,
                );
              }
              return target.complete(claim);
            };
          }
          const value = Reflect.get(target, key);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const { client, admin, worker } = fleet({ wrap });
    worker.start();
    const first = await client.send({ threadId: 'l1', input: 'hello' });
    await follow(client, first.runId);
    for (let tries = 0; tries < 100 && !lost; tries++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(lost).toBe(true);
    const next = await client.send({ threadId: 'l1', input: 'again' });
    expect(runEnd(await follow(client, next.runId))).toMatchObject({ termination: { type: 'natural-end' } });
    expect(await admin.deadLetters()).toEqual([]);
  });
});

describe('a worker whose claim lapsed', () => {
  it("applies no further submission: the thread is the next claimer's", async () => {
    let lapsed = true;
    const wrap = (dispatcher: LocalDispatcher) =>
      new Proxy(dispatcher, {
        get(target, key) {
          if (key === 'extend') {
            return async (claim: Parameters<LocalDispatcher['extend']>[0], lockMs?: number) => {
              if (lapsed)
                throw new LunationError('claim-lost', `The claim of thread "${claim.threadId}" lapsed`);
              return target.extend(claim, lockMs);
            };
          }
          const value = Reflect.get(target, key);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const { client, store, worker } = fleet({ wrap });
    worker.start();
    const { runId } = await client.send({ threadId: 'k1', input: 'hello' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await store.getRun(runId)).toBeUndefined();
    lapsed = false;
    expect(runEnd(await follow(client, runId))).toMatchObject({ termination: { type: 'natural-end' } });
  });
});

describe('a cancel filed as the worker drains', () => {
  it('holds for the waiting run it names: the approval that follows runs nothing', async () => {
    let pendingReads = 0;
    let runId = '';
    const wrap = (dispatcher: LocalDispatcher) =>
      new Proxy(dispatcher, {
        get(target, key) {
          if (key === 'pending') {
            return async (threadId: string) => {
              // The second look at the inbox comes after the run suspended: the user's Stop lands now.
              if (++pendingReads === 2)
                await target.requestCancel({ threadId, runId, reason: 'stop pressed' });
              return target.pending(threadId);
            };
          }
          const value = Reflect.get(target, key);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const { client, worker } = fleet({ wrap });
    runId = 'r-c7';
    worker.start();
    await client.send({ threadId: 'c7', input: 'note jam', runId });
    const first = await follow(client, runId);
    const ticket = runEnd(first)?.openTickets[0];
    for (let tries = 0; tries < 100 && pendingReads < 2; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, 100)); // the worker drains and completes its claim
    await client.decide('c7', [{ decisionId: 'yes', ticketId: ticket?.id ?? '', action: 'resume' }]);
    expect(runEnd(await follow(client, runId, first.at(-1)?.id))).toMatchObject({
      termination: { type: 'cancelled' },
    });
    expect(started).toEqual([]);
  });
});

describe('a run whose ending could not be committed', () => {
  it('does not end its log: the worker that continues it logs its real ending', async () => {
    const store = new MemoryStore();
    const commit = store.commit.bind(store);
    let failed = false;
    store.commit = async (input) => {
      if (!failed && input.run?.status === 'done') {
        failed = true;
        throw new LunationError('store-unavailable', 'the store timed out');
      }
      return commit(input);
    };
    const { client, admin, worker } = fleet({ store });
    worker.start();
    const { runId } = await client.send({ threadId: 'e2', input: 'count' });
    for (let tries = 0; tries < 250 && (await store.getRun(runId))?.status !== 'done'; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(failed).toBe(true);
    expect((await store.getRun(runId))?.termination).toEqual({ type: 'natural-end' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const ends = (await admin.readEvents(runId, { limit: 10_000 })).events.filter(
      (record) => record.event.type === 'run-end',
    );
    // One ending, the store's: no `run-end` with the error of the failed commit before it.
    expect(
      ends.map(({ event }) => event.type === 'run-end' && `${event.status}/${event.termination.type}`),
    ).toEqual(['done/natural-end']);
  });
});

describe('a stalled holder whose late append lands while its successor repairs the log', () => {
  it("is refused: the successor claims the run's log before it reads what the log lacks, so each step ends once", async () => {
    const store = new MemoryStore();
    const backend = new LocalDispatchBackend();
    const executions: number[] = [];
    const counting = defineTool({
      name: 'count',
      description: 'Counts',
      input: z.object({ n: z.number() }),
      execute: ({ n }) => {
        executions.push(n);
        return n;
      },
    });
    const build = (owner: string, on: LunationStore) =>
      createRuntime()
        .model('m', model)
        .agent({ id: 'a', model: 'm', tools: [counting] })
        .store(on)
        .options({ leaseTtlMs: 600, owner })
        .build();
    const hang = () => new Promise<never>(() => {});
    // The stalled worker: once its append ending step 2 is out, every call it makes hangs (SIGSTOP), but that
    // append, which lands later (SIGCONT), once its successor has read the log.
    let frozen = false;
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let lateAppend: Promise<unknown> | undefined;
    const stalledStore = new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => (frozen ? hang() : value.apply(target, args));
      },
    });
    const stalledDispatcher = new LocalDispatcher({ backend });
    dispatchers.push(stalledDispatcher);
    const stalledView = new Proxy(stalledDispatcher, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        if (property === 'appendEvents') {
          return (runId: string, events: AgentEvent[], options?: AppendEventsOptions) => {
            if (frozen) return hang();
            if (!events.some((event) => event.type === 'step-end' && event.step === 2)) {
              return target.appendEvents(runId, events, options);
            }
            frozen = true;
            lateAppend = released.then(() => target.appendEvents(runId, events, options));
            return lateAppend;
          };
        }
        return (...args: unknown[]) => (frozen ? hang() : value.apply(target, args));
      },
    });
    const stalled = new AgentWorker({
      runtime: build('stalled', stalledStore),
      dispatcher: stalledView,
      workerId: 'stalled',
      idleWaitMs: 50,
      claimLockMs: 600,
    });
    const client = new FleetClient({ dispatcher: stalledDispatcher, store });
    stalled.start();
    const { runId } = await client.send({ threadId: 'late', input: 'count' });
    for (let tries = 0; tries < 500 && !frozen; tries++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(frozen).toBe(true);

    // The successor: the stalled worker's late append lands right after the successor read the log.
    const successorDispatcher = new LocalDispatcher({ backend });
    dispatchers.push(successorDispatcher);
    const successorView = new Proxy(successorDispatcher, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        if (property === 'readEvents') {
          return async (...args: Parameters<LocalDispatcher['readEvents']>) => {
            const page = await target.readEvents(...args);
            if (args[0] === runId && lateAppend !== undefined) {
              release();
              await lateAppend.catch(() => {});
            }
            return page;
          };
        }
        return value.bind(target);
      },
    });
    const successor = new AgentWorker({
      runtime: build('successor', store),
      dispatcher: successorView,
      workerId: 'successor',
      idleWaitMs: 50,
      claimLockMs: 600,
    });
    workers.push(successor);
    successor.start();
    for (let tries = 0; tries < 500 && (await store.getRun(runId))?.status !== 'done'; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect((await store.getRun(runId))?.status).toBe('done');
    expect(executions).toEqual([1, 2, 3]);
    const log = (await stalledDispatcher.readEvents(runId, { limit: 10_000 })).events;
    const stepEnds = log.flatMap((record) => (record.event.type === 'step-end' ? [record.event.step] : []));
    expect(stepEnds).toEqual([1, 2, 3, 4]);
    expect(log.at(-1)?.event).toMatchObject({ type: 'run-end', status: 'done', steps: 4 });
    void stalled.stop({ deadlineMs: 100 }).catch(() => {});
  }, 30_000);
});

describe('a decision whose first commit fails', () => {
  it('and its error ending too, is applied again: the log stays open (the store still has the run waiting), and the run goes on to its end', async () => {
    const store = new MemoryStore();
    const commit = store.commit.bind(store);
    let failing = 0;
    store.commit = async (input) => {
      const resumeStart =
        input.run?.status === 'running' && input.threadState !== undefined && input.messages.length === 0;
      // The resume's first commit (C0: the decision recorded, the call claimed) fails, and so does the commit
      // of the error ending that follows: the store still has the run waiting, its ticket open.
      if ((failing === 0 && resumeStart) || failing === 1) {
        failing++;
        throw new LunationError('store-unavailable', 'the store timed out');
      }
      return commit(input);
    };
    const { client, worker } = fleet({ store });
    worker.start();
    const { runId } = await client.send({ threadId: 'f1', input: 'note eggs' });
    const first = await follow(client, runId);
    const ticket = runEnd(first)?.openTickets[0];
    expect(ticket?.toolName).toBe('note');
    await client.decide('f1', [{ decisionId: 'yes', ticketId: ticket?.id ?? '', action: 'resume' }]);
    // The log says again that the run waits (the store's truth until the decision is applied again), then ends.
    const rest: RunEventRecord[] = [];
    let after = first.at(-1)?.id;
    for (let tries = 0; tries < 10 && runEnd(rest)?.status !== 'done'; tries++) {
      const more = await follow(client, runId, after);
      rest.push(...more);
      after = more.at(-1)?.id ?? after;
    }
    expect(failing).toBe(2);
    expect(runEnd(rest)).toMatchObject({ status: 'done', termination: { type: 'natural-end' } });
    expect((await store.getRun(runId))?.status).toBe('done');
    expect(started).toEqual(['note eggs']);
  });
});

describe('decisions that leave a ticket open', () => {
  // Seeds 10332 (resumes) and 38849 (handover) of the simulator: the run recorded a denial and waited again for the
  // other ticket, and nothing of that went to its log; a later repair appended the declined call's result after the
  // run's final run-end.
  it("put what the run did into its log before the next decision: the declined call's result, its new ending", async () => {
    const { client, store, admin, worker } = fleet();
    worker.start();
    const { runId } = await client.send({ threadId: 'n2', input: 'two notes' });
    const first = await follow(client, runId);
    const waiting = runEnd(first) as { openTickets: Array<{ id: string }> };
    expect(waiting.openTickets).toHaveLength(2);
    const [a, b] = waiting.openTickets;
    await client.decide('n2', [{ decisionId: 'deny-a', ticketId: a!.id, action: 'cancel', reason: 'no' }]);
    for (let tries = 0; tries < 200; tries++) {
      if ((await store.getRun(runId))?.openTickets.length === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const after = first.at(-1)!.id;
    const logged: string[] = [];
    for (let tries = 0; tries < 200 && !logged.includes('run-end'); tries++) {
      const page = await admin.readEvents(runId, { after });
      logged.splice(0, logged.length, ...page.events.map((record) => record.event.type));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(logged).toContain('tool-result');
    expect(logged.at(-1)).toBe('run-end');
    const notes = started.length;
    await client.decide('n2', [{ decisionId: 'allow-b', ticketId: b!.id, action: 'resume' }]);
    for (let tries = 0; tries < 300 && (await store.getRun(runId))?.status !== 'done'; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(started.slice(notes)).toEqual(['note b']);
  });
});
