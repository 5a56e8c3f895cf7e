import type { RunEventRecord } from '@lunation/contract';
import { createRuntime, defineTool, permissionPlugin, toolCallsKey } from '@lunation/runtime';
import { ownsThread } from '@lunation/runtime/internal';
import { reply, ScriptedModel } from '@lunation/runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { AgentWorker, FleetClient, LocalDispatcher } from '../src/index.js';

// The fleet admits decisions as the runtime does (issue #37): one rule for the owner, open tickets, payloads,
// repeats and what stays undecided — before anything is submitted. Before, the fleet's client only looked for a
// waiting run and the HTTP front checked the owner and the ticket ids by its own rule: a payload failing the
// ticket's schema was queued and failed on the worker, and a repeated decision was submitted again.

const executions: string[] = [];
const note = defineTool({
  name: 'note',
  description: 'Writes a note',
  input: z.object({ text: z.string() }),
  execute: ({ text }) => {
    executions.push(text);
    return `noted ${text}`;
  },
});

const closing: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
  executions.length = 0;
});

async function waitingThread() {
  const store = new MemoryStore();
  const dispatcher = new LocalDispatcher();
  const runtime = createRuntime()
    .model(
      'm',
      new ScriptedModel([
        {
          toolCalls: [
            { toolName: 'note', arguments: { text: 'milk' } },
            { toolName: 'note', arguments: { text: 'eggs' } },
          ],
        },
        reply('Noted.'),
      ]),
    )
    .agent({
      id: 'a',
      model: 'm',
      tools: [note],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'note', decision: 'ask' }] } }],
    })
    .store(store)
    .build();
  const worker = new AgentWorker({ runtime, dispatcher, idleWaitMs: 50 }).start();
  closing.push(
    () => dispatcher.close(),
    () => worker.stop({ deadlineMs: 2_000 }),
  );
  await store.createThread({ id: 't1', resourceId: 'alice' });
  const client = new FleetClient({ dispatcher, store });
  const { runId } = await client.send({ threadId: 't1', input: 'note milk', resourceId: 'alice' });
  const first = await follow(client, runId);
  const end = first.at(-1)?.event;
  if (end?.type !== 'run-end') throw new Error('the run did not end');
  const [milk, eggs] = end.openTickets;
  if (!milk || !eggs) throw new Error('the run did not wait for two approvals');
  return { store, dispatcher, client, runId, ticketId: milk.id, otherTicketId: eggs.id, first };
}

async function follow(client: FleetClient, runId: string, after?: string): Promise<RunEventRecord[]> {
  const records: RunEventRecord[] = [];
  const signal = AbortSignal.timeout(10_000);
  for await (const record of client.events(runId, { signal, ...(after ? { after } : {}) })) {
    records.push(record);
  }
  return records;
}

/** Waits until the thread's call records hold the decision. */
async function recordedOn(store: MemoryStore, decisionId: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const state = await store.getThreadState('t1');
    if (JSON.stringify(state[toolCallsKey.name] ?? {}).includes(`"decisionId":"${decisionId}"`)) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`the worker did not record decision "${decisionId}" within 10 s`);
}

describe('FleetClient.decide admits decisions as the runtime does', () => {
  it('refuses another owner, an unknown ticket and a payload failing the schema before submitting anything', async () => {
    const { client, dispatcher, ticketId } = await waitingThread();
    const yes = { decisionId: 'd1', ticketId, action: 'resume' as const };
    await expect(client.decide('t1', [yes], { resourceId: 'bob' })).rejects.toMatchObject({
      code: 'not-found',
    });
    await expect(
      client.decide('t1', [{ ...yes, ticketId: 'nope' }], { resourceId: 'alice' }),
    ).rejects.toMatchObject({ code: 'unknown-ticket' });
    await expect(
      client.decide('t1', [{ ...yes, payload: { always: 'yes' } }], { resourceId: 'alice' }),
    ).rejects.toMatchObject({ code: 'decision-invalid' });
    expect(await dispatcher.pending('t1')).toEqual([]);
    expect(executions).toEqual([]);
  });

  it('submits fresh decisions once, ignores a repeat without submitting it, and says where its events start', async () => {
    const { client, dispatcher, store, runId, ticketId, otherTicketId, first } = await waitingThread();
    const milk = { decisionId: 'd1', ticketId, action: 'resume' as const };
    const decided = await client.decide('t1', [milk], { resourceId: 'alice', ownedOnly: true });
    expect(decided).toMatchObject({ runId, applied: ['d1'], ignored: [] });
    expect(decided.openTickets.map((ticket) => ticket.id)).toEqual([otherTicketId]);
    expect(decided.submissionId).toEqual(expect.any(String));
    expect(decided.after).toBe(first.at(-1)?.id);
    // The worker records the decision (C0) and the run waits on for the other ticket.
    await recordedOn(store, 'd1');
    expect(executions).toEqual([]);

    const repeated = await client.decide('t1', [milk], { resourceId: 'alice' });
    expect(repeated).toMatchObject({ runId, applied: [], ignored: ['d1'] });
    expect(repeated.submissionId).toBeUndefined();
    expect(repeated.openTickets.map((ticket) => ticket.id)).toEqual([otherTicketId]);
    expect(await dispatcher.pending('t1')).toEqual([]);

    const eggs = { decisionId: 'd2', ticketId: otherTicketId, action: 'resume' as const };
    const last = await client.decide('t1', [milk, eggs], { resourceId: 'alice' });
    expect(last).toMatchObject({ applied: ['d2'], ignored: ['d1'], openTickets: [] });
    const deadline = Date.now() + 10_000;
    while ((await store.getRun(runId))?.status !== 'done' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await store.getRun(runId)).toMatchObject({ status: 'done', finalText: 'Noted.' });
    expect(executions.sort()).toEqual(['eggs', 'milk']);
  });
});

describe('ownsThread, the owner rule', () => {
  it('gives a tenant its own threads, and unowned ones unless it asks for owned ones only', () => {
    expect(ownsThread({ resourceId: 'alice' }, { resourceId: 'alice' })).toBe(true);
    expect(ownsThread({ resourceId: 'alice' }, { resourceId: 'bob' })).toBe(false);
    expect(ownsThread({}, { resourceId: 'bob' })).toBe(true);
    expect(ownsThread({}, { resourceId: 'bob', ownedOnly: true })).toBe(false);
    expect(ownsThread({ resourceId: 'alice' }, {})).toBe(true);
  });
});
