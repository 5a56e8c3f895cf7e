import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  LunationError,
  type LunationStore,
  type ModelRequest,
  type ToolResultPart,
} from '@lunation/contract';
import {
  type AgentDefinition,
  type AgentRuntime,
  createRuntime,
  defineTool,
  permissionPlugin,
  type RunResult,
  type ToolContext,
} from '@lunation/runtime';
import { reply, ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import { SqliteStore } from '@lunation/store-sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { crashableStore } from './crashable-store.js';

// Issue 12's defects, each reproduced: a "process" is a runtime over a store that can die at a chosen point
// (every later store call of that runtime hangs, as after SIGKILL); a second runtime over the same SQLite file
// then continues from the store alone.

const directory = mkdtempSync(join(tmpdir(), 'lunation-crash-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const stores: LunationStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

let counter = 0;
async function openStore(path = join(directory, `db-${++counter}.sqlite`)) {
  const store = await SqliteStore.open({ path });
  stores.push(store);
  return { store, path };
}

interface Execution {
  tool: string;
  toolCallId: string;
  key: string;
  rerun: boolean;
  process: string;
}

/** Tools that log every execution; `hang` names tools that crash their process when they start. */
function toolbox(
  log: Execution[],
  process: string,
  hang: { tools: string[]; crash?: () => void } = { tools: [] },
) {
  const tool = (name: string) =>
    defineTool({
      name,
      description: name,
      input: z.object({}).passthrough(),
      execute: async (_, context) => {
        log.push({
          tool: name,
          toolCallId: context.toolCallId,
          key: context.idempotencyKey,
          rerun: context.rerun,
          process,
        });
        if (hang.tools.includes(name)) {
          hang.crash?.();
          await new Promise(() => {});
        }
        return `${name} done`;
      },
    });
  return [tool('slow'), tool('delete_all'), tool('note'), tool('second')];
}

const approvals = {
  plugin: permissionPlugin,
  config: { rules: [{ tool: 'delete_all', decision: 'ask' as const }] },
};

function runtimeOn(
  store: LunationStore,
  model: ScriptedModel,
  tools: ReturnType<typeof toolbox>,
  options: { owner?: string; agent?: Partial<AgentDefinition> } = {},
): AgentRuntime {
  return createRuntime()
    .model('m', model)
    .agent({ id: 'a', model: 'm', tools, plugins: [approvals], ...options.agent })
    .store(store)
    .options({ leaseTtlMs: 150, ...(options.owner ? { owner: options.owner } : {}) })
    .build();
}

/** A model that answers from the conversation alone, so any process continues the same script. */
function scripted(steps: ScriptedResponse[]) {
  return new ScriptedModel((request: ModelRequest) => {
    const answered = request.messages.filter((message) => message.role === 'tool').length;
    return steps[answered] ?? reply('done');
  });
}

/** Runs on the thread from a fresh runtime, retrying while the dead process's lease has not expired yet. */
async function recover(
  runtime: AgentRuntime,
  threadId: string,
  extra: Parameters<AgentRuntime['run']>[0] = { threadId },
) {
  const deadline = Date.now() + 5_000;
  for (;;) {
    try {
      return await (await runtime.run({ ...extra, threadId, stream: false })).result;
    } catch (error) {
      if (!LunationError.hasCode(error, 'thread-busy') || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

function toolResults(messages: ReadonlyArray<{ message: { role: string; content: unknown[] } }>) {
  return messages
    .filter((record) => record.message.role === 'tool')
    .flatMap((record) => record.message.content as ToolResultPart[]);
}

describe('crash recovery (issue 12)', () => {
  it('1: a gated call never runs without its decision after a crash mid-step', async () => {
    const { store } = await openStore();
    const log: Execution[] = [];
    const model = scripted([
      {
        toolCalls: [
          { toolName: 'slow', arguments: {} },
          { toolName: 'delete_all', arguments: {} },
        ],
      },
    ]);
    const dying = crashableStore(store);
    const first = runtimeOn(dying.store, model, toolbox(log, 'A', { tools: ['slow'], crash: dying.crash }));
    await first.run({ threadId: 't', input: 'go', stream: false });
    await dying.crashed;

    const second = runtimeOn(store, model, toolbox(log, 'B'));
    const recovered = await recover(second, 't');
    expect(recovered.status).toBe('waiting');
    expect(recovered.openTickets.map((ticket) => ticket.toolName)).toEqual(['delete_all']);
    expect(log.filter((entry) => entry.tool === 'delete_all')).toEqual([]);
    // The call cut off mid-execution re-ran once, with the same key, told it is a re-run.
    const slow = log.filter((entry) => entry.tool === 'slow');
    expect(slow.map((entry) => [entry.process, entry.rerun])).toEqual([
      ['A', false],
      ['B', true],
    ]);
    expect(new Set(slow.map((entry) => entry.key)).size).toBe(1);

    const decided = await second.sendDecisions('t', [
      { decisionId: 'd1', ticketId: recovered.openTickets[0]?.id ?? '', action: 'resume' },
    ]);
    expect((await decided.run?.result)?.termination).toEqual({ type: 'natural-end' });
    expect(log.filter((entry) => entry.tool === 'delete_all')).toHaveLength(1);
    expect(toolResults(await store.listMessages('t')).map((part) => part.toolName)).toEqual([
      'slow',
      'delete_all',
    ]);
  });

  it('1: a crash right after the step is committed leaves the gated call waiting, never run', async () => {
    const { store } = await openStore();
    const log: Execution[] = [];
    const model = scripted([{ toolCalls: [{ toolName: 'delete_all', arguments: {} }] }]);
    const dying = crashableStore(store);
    dying.crashAt({
      method: 'commit',
      at: 'after',
      when: (commit) =>
        (commit as { messages: Array<{ role: string }> }).messages.some((m) => m.role === 'assistant'),
    });
    const first = runtimeOn(dying.store, model, toolbox(log, 'A'));
    await first.run({ threadId: 't', input: 'go', stream: false });
    await dying.crashed;
    const recovered = await recover(runtimeOn(store, model, toolbox(log, 'B')), 't');
    expect(recovered.status).toBe('waiting');
    expect(recovered.openTickets.map((ticket) => ticket.toolName)).toEqual(['delete_all']);
    expect(log).toEqual([]);
    expect((await store.getLatestRun('t'))?.openTickets).toEqual(recovered.openTickets);
  });

  it('2: arguments nested 10,000 deep for a gated tool become an error result; the tool never runs', async () => {
    const { store } = await openStore();
    const log: Execution[] = [];
    let deep = '0';
    for (let index = 0; index < 10_000; index++) deep = `[${deep}]`;
    const model = new ScriptedModel([
      {
        parts: [
          ...callParts('c1', 'delete_all', `{"value":${deep}}`),
          { type: 'finish', stopReason: 'tool-use' },
        ],
      },
      reply('noted'),
      reply('second answer'),
    ]);
    const anything = defineTool({
      name: 'delete_all',
      description: 'deletes',
      input: z.any(),
      execute: () => {
        log.push({ tool: 'delete_all', toolCallId: '', key: '', rerun: false, process: 'A' });
        return 'deleted';
      },
    });
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [anything], plugins: [approvals] })
      .store(store)
      .build();
    const result = await runtime.generate({ threadId: 't', input: 'go' });
    expect(result).toMatchObject({ status: 'done', termination: { type: 'natural-end' }, openTickets: [] });
    const [part] = toolResults(await store.listMessages('t'));
    expect(part?.result).toMatchObject({
      status: 'error',
      message: expect.stringMatching(/nested deeper than 64/),
    });
    expect((await store.getLatestRun('t'))?.status).toBe('done');
    expect((await runtime.generate({ threadId: 't', input: 'again' })).finalText).toBe('second answer');
    expect(log).toEqual([]);
  });

  it('3: a run resumed after an approval and killed in its next model call continues to the end', async () => {
    const { store } = await openStore();
    const log: Execution[] = [];
    let doomed: (() => void) | undefined;
    const model = new ScriptedModel(async (request: ModelRequest) => {
      const answered = request.messages.filter((message) => message.role === 'tool').length;
      if (answered === 0) return { toolCalls: [{ toolName: 'delete_all', arguments: {} }] };
      if (doomed) {
        doomed();
        await new Promise(() => {});
      }
      return reply('all deleted');
    });
    const first = runtimeOn(store, model, toolbox(log, 'A'));
    const suspended = await first.generate({ threadId: 't', input: 'go' });
    const dying = crashableStore(store);
    doomed = dying.crash;
    const resuming = runtimeOn(dying.store, model, toolbox(log, 'B'));
    await resuming.run({
      threadId: 't',
      decisions: [{ decisionId: 'd1', ticketId: suspended.openTickets[0]?.id ?? '', action: 'resume' }],
    });
    await dying.crashed;
    doomed = undefined;
    // The decision was consumed: the store says running, with no open tickets.
    expect(await store.getLatestRun('t')).toMatchObject({ status: 'running', openTickets: [] });
    const done = await recover(runtimeOn(store, model, toolbox(log, 'C')), 't');
    expect(done).toMatchObject({ status: 'done', finalText: 'all deleted' });
    expect(log.map((entry) => entry.process)).toEqual(['B']);
  });

  it('4a: a finished sequential call is not run again when the process dies in the next one', async () => {
    const { store } = await openStore();
    const log: Execution[] = [];
    const model = scripted([
      {
        toolCalls: [
          { toolName: 'note', arguments: {} },
          { toolName: 'slow', arguments: {} },
        ],
      },
    ]);
    const dying = crashableStore(store);
    await runtimeOn(dying.store, model, toolbox(log, 'A', { tools: ['slow'], crash: dying.crash })).run({
      threadId: 't',
      input: 'go',
    });
    await dying.crashed;
    const done = await recover(runtimeOn(store, model, toolbox(log, 'B')), 't');
    expect(done.finalText).toBe('done');
    expect(log.map((entry) => `${entry.tool}@${entry.process}`)).toEqual(['note@A', 'slow@A', 'slow@B']);
    expect(toolResults(await store.listMessages('t')).map((part) => part.result.data)).toEqual([
      'note done',
      'slow done',
    ]);
  });

  it('4b: a call run during a resume is not run again when the process dies in the next model call', async () => {
    const { store } = await openStore();
    const log: Execution[] = [];
    let doomed: (() => void) | undefined;
    const model = new ScriptedModel(async (request: ModelRequest) => {
      const answered = request.messages.filter((message) => message.role === 'tool').length;
      if (answered === 0) return { toolCalls: [{ toolName: 'delete_all', arguments: {} }] };
      if (doomed) {
        doomed();
        await new Promise(() => {});
      }
      return reply('finished');
    });
    const suspended = await runtimeOn(store, model, toolbox(log, 'A')).generate({
      threadId: 't',
      input: 'go',
    });
    const dying = crashableStore(store);
    doomed = dying.crash;
    await runtimeOn(dying.store, model, toolbox(log, 'B')).run({
      threadId: 't',
      decisions: [{ decisionId: 'd1', ticketId: suspended.openTickets[0]?.id ?? '', action: 'resume' }],
    });
    await dying.crashed;
    doomed = undefined;
    expect(await recover(runtimeOn(store, model, toolbox(log, 'C')), 't')).toMatchObject({
      finalText: 'finished',
    });
    expect(log.map((entry) => `${entry.tool}@${entry.process}`)).toEqual(['delete_all@B']);
  });

  it('5: values JSON cannot hold, empty ids and unprintable throws become error results; the run goes on', async () => {
    const { store } = await openStore();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('trap');
        },
        getPrototypeOf() {
          throw new Error('trap');
        },
      },
    );
    const badToString = {
      toString: () => {
        throw new Error('no text');
      },
    };
    const throwingMessage = Object.create(Error.prototype, {
      message: {
        get() {
          throw new Error('no message');
        },
      },
    });
    const cases: Array<[string, (context: ToolContext) => unknown]> = [
      ['big', (context) => context.output({ status: 'success', data: { n: BigInt(1) } as never })],
      ['cycle', (context) => context.output({ status: 'success', data: cyclic as never })],
      ['plain_cycle', () => cyclic],
      [
        'null_proto',
        () => {
          throw Object.create(null);
        },
      ],
      [
        'bad_to_string',
        () => {
          throw badToString;
        },
      ],
      [
        'bad_message',
        () => {
          throw throwingMessage;
        },
      ],
      [
        'proxy',
        () => {
          throw hostile;
        },
      ],
      ['proxy_value', () => hostile],
      ['symbol', () => Symbol('x')],
    ];
    const tools = cases.map(([name, run]) =>
      defineTool({ name, description: name, input: z.object({}), execute: (_, context) => run(context) }),
    );
    const model = new ScriptedModel([
      {
        parts: [
          ...cases.flatMap(([name], index) => callParts(`c${index}`, name, '{}')),
          ...callParts('', 'big', '{}'),
          ...callParts('c0', 'big', '{}'),
          { type: 'finish', stopReason: 'tool-use' },
        ],
      },
      reply('survived'),
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools })
      .store(store)
      .build();
    const result = await runtime.generate({ threadId: 't', input: 'go' });
    expect(result).toMatchObject({ status: 'done', finalText: 'survived' });
    const parts = toolResults(await store.listMessages('t'));
    expect(parts).toHaveLength(cases.length + 2);
    for (const part of parts) expect(part.result.status).toBe('error');
    expect(parts[0]?.result.message).toMatch(/cannot be stored: .*BigInt/);
    expect(parts[1]?.result.message).toMatch(/cannot be stored: .*circular/);
    expect(parts[3]?.result.message).toBe('Tool "null_proto" failed: an unprintable thrown object');
    expect(parts.at(-2)?.result.message).toMatch(/no id/);
    expect(parts.at(-1)?.result.message).toMatch(/same id as another call of this answer/);
    // Every executed call's ledger entry is completed, none left in flight.
    const ledger = await store.listToolExecutions(result.identity.runId);
    expect(ledger).toHaveLength(cases.length);
    expect(ledger.every((entry) => entry.status === 'completed')).toBe(true);
  });

  it('6: a tool that never settles is abandoned on cancel; the run ends and the thread is free at once', async () => {
    const { store } = await openStore();
    const stuck = defineTool({
      name: 'stuck',
      description: 'ignores its signal',
      input: z.object({}),
      execute: () => new Promise(() => {}),
    });
    const model = new ScriptedModel([{ toolCalls: [{ toolName: 'stuck', arguments: {} }] }, reply('after')]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [stuck], toolExecution: { cancelGraceMs: 50 } })
      .store(store)
      .build();
    const handle = await runtime.run({ threadId: 't', input: 'go' });
    await waitUntil(async () => (await store.listToolExecutions(handle.runId)).length === 1);
    runtime.cancel('t');
    const result = await handle.result;
    expect(result.termination.type).toBe('cancelled');
    expect(await store.getLease('t')).toBeUndefined();
    const [entry] = await store.listToolExecutions(handle.runId);
    expect(entry).toMatchObject({
      status: 'completed',
      result: { status: 'error', metadata: { abandoned: true } },
    });
    expect((await runtime.generate({ threadId: 't', input: 'next' })).finalText).toBe('after');
  });

  it('6: the timeout stop condition ends a run stuck in a tool; a tool timeout is an error result', async () => {
    const { store } = await openStore();
    const stuck = defineTool({
      name: 'stuck',
      description: 'never ends',
      input: z.object({}),
      execute: () => new Promise(() => {}),
    });
    const quick = defineTool({
      name: 'quick_timeout',
      description: 'times out but stops when asked',
      input: z.object({}),
      timeoutMs: 30,
      execute: (_, context) =>
        new Promise((_, reject) =>
          context.signal.addEventListener('abort', () => reject(context.signal.reason)),
        ),
    });
    const model = new ScriptedModel([
      { toolCalls: [{ toolName: 'quick_timeout', arguments: {} }] },
      { toolCalls: [{ toolName: 'stuck', arguments: {} }] },
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({
        id: 'a',
        model: 'm',
        tools: [stuck, quick],
        stopConditions: [{ type: 'timeout', ms: 300 }],
        toolExecution: { cancelGraceMs: 50 },
      })
      .store(store)
      .build();
    const result = await runtime.generate({ threadId: 't', input: 'go' });
    expect(result.termination).toMatchObject({ type: 'stopped', code: 'timeout' });
    const parts = toolResults(await store.listMessages('t'));
    expect(parts[0]?.result).toMatchObject({
      status: 'error',
      message: 'Tool "quick_timeout" timed out after 30 ms.',
    });
    expect(parts[1]?.result).toMatchObject({ status: 'error', metadata: { abandoned: true } });
    expect(await store.getLease('t')).toBeUndefined();
  });

  it('7: records agree with the thread: partial decisions, run ids on messages, results in call order', async () => {
    const { store } = await openStore();
    const log: Execution[] = [];
    const model = scripted([
      {
        toolCalls: [
          { toolName: 'note', arguments: {} },
          { toolName: 'delete_all', arguments: { which: 'a' } },
          { toolName: 'second', arguments: {} },
          { toolName: 'delete_all', arguments: { which: 'b' } },
        ],
      },
    ]);
    const seenInput: string[] = [];
    const runtime = createRuntime()
      .model('m', model)
      .plugin({
        name: 'guard',
        register: (registrar) =>
          registrar.hook('RunStart', (context) => {
            const last = context.messages.at(-1);
            if (last?.role === 'user')
              seenInput.push(last.content[0]?.type === 'text' ? last.content[0].text : '');
          }),
      })
      .agent({ id: 'a', model: 'm', tools: toolbox(log, 'A'), plugins: [approvals, 'guard'] })
      .store(store)
      .build();
    const suspended = await runtime.generate({ threadId: 't', input: 'four calls' });
    expect(seenInput).toEqual(['four calls']);
    const [first, second] = suspended.openTickets;
    const partial = await runtime.sendDecisions('t', [
      { decisionId: 'd1', ticketId: first?.id ?? '', action: 'resume' },
    ]);
    expect(partial.openTickets.map((ticket) => ticket.id)).toEqual([second?.id]);
    expect((await store.getLatestRun('t'))?.openTickets.map((ticket) => ticket.id)).toEqual([second?.id]);

    const last = await runtime.sendDecisions('t', [
      { decisionId: 'd2', ticketId: second?.id ?? '', action: 'resume' },
    ]);
    const done = (await last.run?.result) as RunResult;
    expect(done.status).toBe('done');
    const records = await store.listMessages('t');
    expect(records.every((record) => record.runId === done.identity.runId)).toBe(true);
    const parts = toolResults(records);
    expect(parts.map((part) => part.toolName)).toEqual(['note', 'delete_all', 'second', 'delete_all']);
    expect(log.map((entry) => entry.tool)).toEqual(['note', 'second', 'delete_all', 'delete_all']);

    // An already applied decision gets the same answer from run() as the store gives.
    const again = await (
      await runtime.run({
        threadId: 't',
        decisions: [{ decisionId: 'd2', ticketId: second?.id ?? '', action: 'resume' }],
      })
    ).result;
    expect(again).toMatchObject({ status: 'done', openTickets: [], termination: { type: 'natural-end' } });
  });

  it('9: a runtime restarted with the same owner takes its thread over once the dead life stops renewing; another owner is told when', async () => {
    const { store } = await openStore();
    const log: Execution[] = [];
    const model = scripted([{ toolCalls: [{ toolName: 'slow', arguments: {} }] }]);
    const dying = crashableStore(store);
    const first = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: toolbox(log, 'A', { tools: ['slow'], crash: dying.crash }) })
      .store(dying.store)
      .options({ owner: 'server-1', leaseTtlMs: 2_000 })
      .build();
    await first.run({ threadId: 't', input: 'go' });
    await dying.crashed;
    const lease = await store.getLease('t');
    const stranger = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: toolbox(log, 'X') })
      .store(store)
      .options({ owner: 'server-2' })
      .build();
    const busy = await stranger.run({ threadId: 't' }).catch((error: unknown) => error);
    expect(LunationError.hasCode(busy, 'thread-busy')).toBe(true);
    expect((busy as Error).message).toMatch(/another process \(server-1\).*lease expires in [12] s/);

    const restarted = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: toolbox(log, 'B') })
      .store(store)
      .options({ owner: 'server-1', leaseTtlMs: 2_000 })
      .build();
    // Right after the crash the lease looks renewed moments ago: it may be a live twin, so no takeover yet.
    const early = await restarted.run({ threadId: 't' }).catch((error: unknown) => error);
    expect(LunationError.hasCode(early, 'thread-busy')).toBe(true);
    expect((early as Error).message).toContain("another live process with this runtime's own owner");
    const done = await recover(restarted, 't');
    expect(done.finalText).toBe('done');
    expect(Date.now()).toBeLessThan(lease?.expiresAt ?? 0);
    expect(log.map((entry) => `${entry.tool}@${entry.process}`)).toEqual(['slow@A', 'slow@B']);
  });
});

function callParts(toolCallId: string, toolName: string, args: string) {
  return [{ type: 'tool-call-end' as const, toolCallId, toolName, arguments: args }];
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
