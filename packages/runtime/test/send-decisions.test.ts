import { LunationError } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { createRuntime, defineTool, permissionPlugin } from '../src/index.js';
import { callTool, reply, ScriptedModel } from '../src/testing/index.js';

function runtimeOn(store: MemoryStore, model: ScriptedModel, log: string[]) {
  const send = defineTool({
    name: 'gated_send',
    description: 'Sends',
    input: z.object({}),
    execute: () => {
      log.push('sent');
      return 'sent';
    },
  });
  return createRuntime()
    .model('m', model)
    .agent({
      id: 'a',
      model: 'm',
      tools: [send],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'gated_*', decision: 'ask' }] } }],
    })
    .store(store)
    .build();
}

/** A run of `runtimeOn(store)` waiting on two gated calls, and a denial of the first one's ticket. */
async function waitingOnTwo(store: MemoryStore) {
  const log: string[] = [];
  const model = new ScriptedModel([
    {
      toolCalls: [
        { toolName: 'gated_send', arguments: {} },
        { toolName: 'gated_send', arguments: {} },
      ],
    },
    reply('done'),
  ]);
  const runtime = runtimeOn(store, model, log);
  const waiting = await (await runtime.run({ threadId: 't', input: 'go', stream: false })).result;
  expect(waiting.openTickets).toHaveLength(2);
  const [first, second] = waiting.openTickets;
  const deny = { decisionId: 'd1', ticketId: first?.id ?? '', action: 'cancel' as const, reason: 'no' };
  return { runtime, log, first, second, deny };
}

describe('sendDecisions at its boundary (issue 24)', () => {
  it("takes the caller's resourceId: another owner's thread is not-found, as for run(), and nothing changes", async () => {
    const store = new MemoryStore();
    const log: string[] = [];
    const runtime = runtimeOn(store, new ScriptedModel([callTool('gated_send', {}), reply('done')]), log);
    const waiting = await (
      await runtime.run({ threadId: 't', resourceId: 'ann', input: 'go', stream: false })
    ).result;
    const decision = {
      decisionId: 'd1',
      ticketId: waiting.openTickets[0]?.id ?? '',
      action: 'resume' as const,
    };
    const asRun = await runtime
      .run({ threadId: 't', resourceId: 'bob', decisions: [decision] })
      .catch((e) => e);
    const asDecisions = await runtime.sendDecisions('t', [decision], { resourceId: 'bob' }).catch((e) => e);
    expect(LunationError.hasCode(asRun, 'not-found')).toBe(true);
    expect(LunationError.hasCode(asDecisions, 'not-found')).toBe(true);
    expect((asDecisions as LunationError).message).toBe((asRun as LunationError).message);
    expect(await store.getLatestRun('t')).toMatchObject({
      status: 'waiting',
      openTickets: [{ id: decision.ticketId }],
    });
    expect(log).toEqual([]);

    const outcome = await runtime.sendDecisions('t', [decision], { resourceId: 'ann' });
    expect((await outcome.run?.result)?.status).toBe('done');
    expect(log).toEqual(['sent']);
  });

  it('refuses an id that names a run and another thread alike, changing nothing', async () => {
    const store = new MemoryStore();
    const log: string[] = [];
    const runtime = runtimeOn(store, new ScriptedModel([callTool('gated_send', {}), reply('done')]), log);
    const waiting = await (await runtime.run({ threadId: 't', input: 'go', stream: false })).result;
    const runId = waiting.identity.runId;
    await store.createThread({ id: runId });
    const decision = {
      decisionId: 'd1',
      ticketId: waiting.openTickets[0]?.id ?? '',
      action: 'resume' as const,
    };
    const refused = await runtime.sendDecisions(runId, [decision]).catch((e) => e);
    expect(LunationError.hasCode(refused, 'invalid-argument')).toBe(true);
    expect((refused as LunationError).message).toContain('names both a run');
    expect(await store.getLatestRun('t')).toMatchObject({ status: 'waiting' });
    const outcome = await runtime.sendDecisions('t', [decision]);
    expect((await outcome.run?.result)?.status).toBe('done');
  });

  it('takes the target by kind: { threadId } or { runId } skip the lookups; a missing thread is not-found, never created', async () => {
    const store = new MemoryStore();
    const log: string[] = [];
    const model = new ScriptedModel([
      callTool('gated_send', {}),
      reply('done'),
      callTool('gated_send', {}),
      reply('again'),
    ]);
    const runtime = runtimeOn(store, model, log);
    const reads: string[] = [];
    for (const method of ['getRun', 'getThread'] as const) {
      const original = store[method].bind(store);
      store[method] = ((id: string) => {
        reads.push(`${method} ${id}`);
        return original(id);
      }) as never;
    }
    const waiting = await (await runtime.run({ threadId: 't', input: 'go', stream: false })).result;
    const decide = (ticketId: string, decisionId: string) => [
      { decisionId, ticketId, action: 'resume' as const },
    ];

    const missing = await runtime.sendDecisions({ threadId: 'nope' }, decide('x', 'd0')).catch((e) => e);
    expect(LunationError.hasCode(missing, 'not-found')).toBe(true);
    expect(await store.getThread('nope')).toBeUndefined();
    reads.length = 0;

    const byThread = await runtime.sendDecisions(
      { threadId: 't' },
      decide(waiting.openTickets[0]?.id ?? '', 'd1'),
    );
    const again = await byThread.run?.result;
    expect(again?.status).toBe('done');
    expect(reads).toEqual([]);

    const second = await (await runtime.run({ threadId: 't', input: 'go again', stream: false })).result;
    const byRun = await runtime.sendDecisions(
      { runId: second.identity.runId },
      decide(second.openTickets[0]?.id ?? '', 'd2'),
    );
    expect((await byRun.run?.result)?.status).toBe('done');
    expect(reads).toEqual([`getRun ${second.identity.runId}`]);
    expect(log).toEqual(['sent', 'sent']);
  });

  it('with ownedOnly, a thread without an owner is not-found for a named resource; without it, any caller may decide', async () => {
    const store = new MemoryStore();
    const log: string[] = [];
    const runtime = runtimeOn(store, new ScriptedModel([callTool('gated_send', {}), reply('done')]), log);
    const waiting = await (await runtime.run({ threadId: 't', input: 'go', stream: false })).result;
    const decisions = [
      { decisionId: 'd1', ticketId: waiting.openTickets[0]?.id ?? '', action: 'resume' as const },
    ];
    const refused = await runtime
      .sendDecisions({ threadId: 't' }, decisions, { resourceId: 'ann', ownedOnly: true })
      .catch((e) => e);
    expect(LunationError.hasCode(refused, 'not-found')).toBe(true);
    expect(await store.getLatestRun('t')).toMatchObject({ status: 'waiting' });
    expect(log).toEqual([]);
    const outcome = await runtime.sendDecisions({ threadId: 't' }, decisions, { resourceId: 'ann' });
    expect((await outcome.run?.result)?.status).toBe('done');
    expect(log).toEqual(['sent']);
  });

  it('refuses two decisions for one ticket at the boundary; a repeated decision id is a retry', async () => {
    const store = new MemoryStore();
    const log: string[] = [];
    const runtime = runtimeOn(store, new ScriptedModel([callTool('gated_send', {}), reply('done')]), log);
    const waiting = await (await runtime.run({ threadId: 't', input: 'go', stream: false })).result;
    const ticketId = waiting.openTickets[0]?.id ?? '';
    const refused = await runtime
      .sendDecisions('t', [
        { decisionId: 'd1', ticketId, action: 'resume' },
        { decisionId: 'd2', ticketId, action: 'cancel' },
      ])
      .catch((e) => e);
    expect(LunationError.hasCode(refused, 'decision-invalid')).toBe(true);
    expect(await store.getLatestRun('t')).toMatchObject({ status: 'waiting' });
    const outcome = await runtime.sendDecisions('t', [
      { decisionId: 'd1', ticketId, action: 'resume' },
      { decisionId: 'd1', ticketId, action: 'resume' },
    ]);
    expect((await outcome.run?.result)?.status).toBe('done');
    expect(log).toEqual(['sent']);
  });
});

describe('decisions that leave tickets open, their run ending otherwise', () => {
  // Seed 14616 of the simulator's `resumes` profile: a worker applied a denial while another ticket stayed open;
  // the run lost its lease before it recorded the denial, yet the outcome said it was applied and the worker
  // acknowledged it. The user's contrary approval sent after it was applied next, and the gated call ran.
  it('hands back the run when it did not wait again: its decisions may not be recorded', async () => {
    class FailingCommits extends MemoryStore {
      failing = false;
      override async commit(commit: Parameters<MemoryStore['commit']>[0]) {
        if (this.failing) throw new LunationError('store-unavailable', 'the database is down');
        return super.commit(commit);
      }
    }
    const store = new FailingCommits();
    const { runtime, log, first, second, deny } = await waitingOnTwo(store);
    store.failing = true;
    const outcome = await runtime.sendDecisions('t', [deny]);
    store.failing = false;
    // The run did not record the denial: the caller is given the run to follow, not a run waiting again.
    expect(outcome.run).toBeDefined();
    expect((await outcome.run?.result)?.status).not.toBe('waiting');
    expect(await store.getLatestRun('t')).toMatchObject({
      openTickets: [{ id: first?.id }, { id: second?.id }],
    });
    expect(log).toEqual([]);
  });
});

describe('a decision that settles a call while another ticket stays open', () => {
  // Seed 34686 of the simulator's `handover` profile (and 10332 of `resumes`): a denial recorded while another
  // ticket stayed open was stored, never told as a `tool-result`; the run, cancelled, ended with it in its tool
  // message. A fleet worker repairing the run's log later appended the result after the run's end.
  async function deniedOfTwo(signal?: AbortSignal) {
    const store = new MemoryStore();
    const { runtime, log, first, deny } = await waitingOnTwo(store);
    const handle = await runtime.run({ threadId: 't', decisions: [deny], ...(signal ? { signal } : {}) });
    const events: string[] = [];
    for await (const event of handle.events) {
      if (event.type === 'tool-result') events.push(`tool-result ${event.toolCallId} ${event.status}`);
      else if (event.type === 'run-end') events.push(`run-end ${event.status}`);
    }
    expect(log).toEqual([]);
    return { events, toolCallId: first?.toolCallId, store };
  }

  it("tells the declined call's result before the run waits again for the other ticket", async () => {
    const { events, toolCallId } = await deniedOfTwo();
    expect(events).toEqual([`tool-result ${toolCallId} cancelled`, 'run-end waiting']);
  });

  it('tells it once when the run is cancelled as the decision is applied', async () => {
    const { events, toolCallId, store } = await deniedOfTwo(AbortSignal.abort('stop'));
    expect(events.filter((event) => event.includes(toolCallId ?? '-'))).toEqual([
      `tool-result ${toolCallId} cancelled`,
    ]);
    expect(events.at(-1)).toBe('run-end done');
    expect((await store.getLatestRun('t'))?.termination?.type).toBe('cancelled');
  });
});
