import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  INTERRUPTED_CALL_ACTION,
  type InterruptPolicy,
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
} from '@lunation/runtime';
import { reply, ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import { SqliteStore } from '@lunation/store-sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { crashableStore } from './crashable-store.js';

// Issue 23: the crash window (a call that started and never had its completion recorded) under each interrupt
// policy. A "process" is a runtime over a store that can die; the next runtime over the same SQLite file
// continues from the store alone.

const directory = mkdtempSync(join(tmpdir(), 'lunation-window-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const stores: LunationStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

let counter = 0;
async function openStore() {
  const store = await SqliteStore.open({ path: join(directory, `db-${++counter}.sqlite`) });
  stores.push(store);
  return store;
}

interface Execution {
  process: string;
  key: string;
  rerun: boolean;
}

/** `send`: a tool that logs each execution and, in a dying process, kills it after starting. */
function sendTool(
  log: Execution[],
  process: string,
  options: { crash?: () => void; policy?: InterruptPolicy },
) {
  return defineTool({
    name: 'send',
    description: 'Sends a message',
    input: z.object({ to: z.string() }),
    ...(options.policy ? { interruptPolicy: options.policy } : {}),
    execute: async ({ to }, context) => {
      log.push({ process, key: context.idempotencyKey, rerun: context.rerun });
      if (options.crash) {
        options.crash();
        await new Promise(() => {});
      }
      return { sentTo: to };
    },
  });
}

/** A model that answers from the conversation alone, so any process continues the same script. */
function scripted(steps: ScriptedResponse[]) {
  return new ScriptedModel((request: ModelRequest) => {
    const answered = request.messages.filter((message) => message.role === 'tool').length;
    return steps[answered] ?? reply('done');
  });
}

const model = () =>
  scripted([{ toolCalls: [{ toolName: 'send', arguments: { to: 'ann' } }] }, reply('sent')]);

function runtimeOn(
  store: LunationStore,
  tool: ReturnType<typeof sendTool>,
  agent: Partial<AgentDefinition> = {},
) {
  return createRuntime()
    .model('m', model())
    .agent({ id: 'a', model: 'm', tools: [tool], ...agent })
    .store(store)
    .options({ leaseTtlMs: 150 })
    .build();
}

async function recover(runtime: AgentRuntime, threadId: string) {
  const deadline = Date.now() + 5_000;
  for (;;) {
    try {
      return await (await runtime.run({ threadId, stream: false })).result;
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

/** Process A starts `send` and dies mid-call; returns the store as process A left it. */
async function cutOff(log: Execution[], policy?: InterruptPolicy, agent: Partial<AgentDefinition> = {}) {
  const store = await openStore();
  const dying = crashableStore(store);
  const first = runtimeOn(
    dying.store,
    sendTool(log, 'A', { crash: dying.crash, ...(policy ? { policy } : {}) }),
    agent,
  );
  await first.run({ threadId: 't', input: 'go', stream: false });
  await dying.crashed;
  return store;
}

describe('interrupt policies (issue 23)', () => {
  it('rerun (the default): the cut-off call runs again with its key and rerun: true', async () => {
    const log: Execution[] = [];
    const store = await cutOff(log);
    const result = await recover(runtimeOn(store, sendTool(log, 'B', {})), 't');
    expect(result).toMatchObject({ status: 'done', finalText: 'sent' });
    expect(log.map((entry) => [entry.process, entry.rerun])).toEqual([
      ['A', false],
      ['B', true],
    ]);
    expect(log[0]?.key).toBe(log[1]?.key);
  });

  it('fail: the cut-off call never runs again; the model is told it may or may not have taken effect', async () => {
    const log: Execution[] = [];
    const store = await cutOff(log, 'fail');
    const result = await recover(runtimeOn(store, sendTool(log, 'B', { policy: 'fail' })), 't');
    expect(result).toMatchObject({ status: 'done', finalText: 'sent', termination: { type: 'natural-end' } });
    expect(log.map((entry) => entry.process)).toEqual(['A']);
    const [part] = toolResults(await store.listMessages('t'));
    expect(part?.result).toMatchObject({ status: 'error', metadata: { interrupted: true } });
    expect(part?.result.message).toMatch(/may or may not have taken effect/);
    const [entry] = await store.listToolExecutions(result.identity.runId);
    expect(entry).toMatchObject({ status: 'completed', attempts: 1, result: { status: 'error' } });
  });

  it('ask (agent default): a ticket of its own kind; "rerun" from another process runs it again once', async () => {
    const log: Execution[] = [];
    const store = await cutOff(log, undefined, { interruptPolicy: 'ask' });
    const waiting = await recover(runtimeOn(store, sendTool(log, 'B', {}), { interruptPolicy: 'ask' }), 't');
    expect(waiting.status).toBe('waiting');
    expect(waiting.openTickets).toHaveLength(1);
    const ticket = waiting.openTickets[0];
    expect(ticket).toMatchObject({ action: INTERRUPTED_CALL_ACTION, toolName: 'send' });
    expect(ticket?.parameters).toMatchObject({ toolName: 'send', arguments: { to: 'ann' }, attempts: 1 });
    expect(log).toHaveLength(1);
    // A payload off the ticket's schema is refused, changing nothing.
    const third = runtimeOn(store, sendTool(log, 'C', {}), { interruptPolicy: 'ask' });
    await expect(
      third.sendDecisions('t', [
        { decisionId: 'bad', ticketId: ticket?.id ?? '', action: 'resume', payload: { choice: 'maybe' } },
      ]),
    ).rejects.toMatchObject({ code: 'decision-invalid' });
    const decided = await third.sendDecisions('t', [
      { decisionId: 'd1', ticketId: ticket?.id ?? '', action: 'resume', payload: { choice: 'rerun' } },
    ]);
    expect(await decided.run?.result).toMatchObject({ status: 'done', finalText: 'sent' });
    expect(log.map((entry) => [entry.process, entry.rerun])).toEqual([
      ['A', false],
      ['C', true],
    ]);
    expect(new Set(log.map((entry) => entry.key)).size).toBe(1);
    const [part] = toolResults(await store.listMessages('t'));
    expect(part?.result).toEqual({ status: 'success', data: { sentTo: 'ann' } });
  });

  it('ask: "done" with a result settles the call with it; the tool never runs again', async () => {
    const log: Execution[] = [];
    const store = await cutOff(log, 'ask');
    const waiting = await recover(runtimeOn(store, sendTool(log, 'B', { policy: 'ask' })), 't');
    const decided = await runtimeOn(store, sendTool(log, 'C', { policy: 'ask' })).sendDecisions('t', [
      {
        decisionId: 'd1',
        ticketId: waiting.openTickets[0]?.id ?? '',
        action: 'resume',
        payload: { choice: 'done', result: { sentTo: 'ann', checked: 'by hand' } },
      },
    ]);
    expect(await decided.run?.result).toMatchObject({ status: 'done', finalText: 'sent' });
    expect(log.map((entry) => entry.process)).toEqual(['A']);
    const [part] = toolResults(await store.listMessages('t'));
    expect(part?.result).toMatchObject({ status: 'success', data: { sentTo: 'ann', checked: 'by hand' } });
  });

  it('ask: a cancel decision fails the call with the reason; the tool never runs again', async () => {
    const log: Execution[] = [];
    const store = await cutOff(log, 'ask');
    const waiting = await recover(runtimeOn(store, sendTool(log, 'B', { policy: 'ask' })), 't');
    const decided = await runtimeOn(store, sendTool(log, 'C', { policy: 'ask' })).sendDecisions('t', [
      {
        decisionId: 'd1',
        ticketId: waiting.openTickets[0]?.id ?? '',
        action: 'cancel',
        reason: 'It went out.',
      },
    ]);
    expect(await decided.run?.result).toMatchObject({ status: 'done' });
    expect(log).toHaveLength(1);
    const [part] = toolResults(await store.listMessages('t'));
    expect(part?.result.status).toBe('error');
    expect(part?.result.message).toMatch(/may or may not have taken effect\. It went out\.$/);
  });

  it("the permission plugin's rules set the policy over the tool's own", async () => {
    const log: Execution[] = [];
    const rules = {
      plugin: permissionPlugin,
      config: { rules: [{ tool: 'se*', arguments: { to: 'ann' }, interrupt: 'fail' as const }] },
    };
    const store = await cutOff(log, 'rerun', { plugins: [rules] });
    const result = await recover(
      runtimeOn(store, sendTool(log, 'B', { policy: 'rerun' }), { plugins: [rules] }),
      't',
    );
    expect(result.status).toBe('done');
    expect(log.map((entry) => entry.process)).toEqual(['A']);
    expect(toolResults(await store.listMessages('t'))[0]?.result.metadata).toEqual({ interrupted: true });
  });

  it('an approved call cut off mid-way follows its policy too (fail), and is not run again', async () => {
    const log: Execution[] = [];
    const approvals = {
      plugin: permissionPlugin,
      config: { rules: [{ tool: 'send', decision: 'ask' as const }] },
    };
    const store = await openStore();
    const dying = crashableStore(store);
    const first = runtimeOn(dying.store, sendTool(log, 'A', { crash: dying.crash, policy: 'fail' }), {
      plugins: [approvals],
    });
    const waiting = await (await first.run({ threadId: 't', input: 'go', stream: false })).result;
    expect(waiting.openTickets.map((ticket) => ticket.action)).toEqual(['approve']);
    await first.sendDecisions('t', [
      { decisionId: 'd1', ticketId: waiting.openTickets[0]?.id ?? '', action: 'resume' },
    ]);
    await dying.crashed;
    expect(log.map((entry) => entry.process)).toEqual(['A']);
    const result = await recover(
      runtimeOn(store, sendTool(log, 'B', { policy: 'fail' }), { plugins: [approvals] }),
      't',
    );
    expect(result).toMatchObject({ status: 'done', finalText: 'sent' });
    expect(log.map((entry) => entry.process)).toEqual(['A']);
    expect(toolResults(await store.listMessages('t'))[0]?.result.metadata).toEqual({ interrupted: true });
  });

  it('a tool that suspended itself is resumed as a first run, not as an interrupted one (fail policy)', async () => {
    const store = await openStore();
    const runs: Array<{ rerun: boolean; decided: boolean }> = [];
    const confirm = defineTool({
      name: 'send',
      description: 'Asks, then sends',
      input: z.object({ to: z.string() }),
      interruptPolicy: 'fail',
      execute: ({ to }, context) => {
        runs.push({ rerun: context.rerun, decided: context.decision !== undefined });
        if (!context.decision)
          return context.suspend({ message: `Send to ${to}?`, resumeMode: 'pass-decision-to-tool' });
        return { sentTo: to };
      },
    });
    const runtime = createRuntime()
      .model('m', model())
      .agent({ id: 'a', model: 'm', tools: [confirm] })
      .store(store)
      .build();
    const waiting = await runtime.generate({ threadId: 't', input: 'go' });
    expect(waiting.openTickets).toHaveLength(1);
    const decided = await runtime.sendDecisions('t', [
      { decisionId: 'd1', ticketId: waiting.openTickets[0]?.id ?? '', action: 'resume' },
    ]);
    expect(await decided.run?.result).toMatchObject({ status: 'done', finalText: 'sent' });
    expect(runs).toEqual([
      { rerun: false, decided: false },
      { rerun: false, decided: true },
    ]);
    expect(toolResults(await store.listMessages('t'))[0]?.result).toEqual({
      status: 'success',
      data: { sentTo: 'ann' },
    });
  });
});
