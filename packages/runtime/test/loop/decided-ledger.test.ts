import type { CheckpointCommit, LunationStore, ModelRequest, ResumeDecision } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type AgentRuntime, createRuntime, defineTool } from '../../src/index.js';
import type { ToolCallRecord } from '../../src/loop/call-records.js';
import { reply, ScriptedModel } from '../../src/testing/index.js';
import { loopBackends, processOn, recover, toolResults, until } from './loop-processes.js';

// A decision that settles a call whose ledger entry is in flight (an interrupted call answered "done" or
// "fail", a tool's own question declined or answered with the decision as its result) completes that entry
// in the same commit that records the call's outcome (C0): the ledger stays a truthful record of execution.

const backends = loopBackends('lunation-decided-ledger');

const model = () =>
  new ScriptedModel((request: ModelRequest) =>
    request.messages.some((message) => message.role === 'tool')
      ? reply('finished')
      : { toolCalls: [{ toolName: 'careful_action', arguments: {} }] },
  );

type Mode = 'dies' | 'asks' | 'works';

/** `careful_action`: dies mid-way (the process stops), asks the user itself, or just works. */
function carefulTool(mode: Mode, crash: () => void = () => {}) {
  return defineTool({
    name: 'careful_action',
    description: 'Does something careful',
    input: z.object({}),
    interruptPolicy: 'ask',
    execute: async (_input, context) => {
      if (mode === 'dies') {
        crash();
        await new Promise(() => {});
      }
      if (mode === 'asks') {
        return context.suspend({
          message: 'What should the answer be?',
          resumeMode: 'use-decision-as-result',
        });
      }
      return 'worked';
    },
  });
}

function runtimeOn(store: LunationStore, tool: ReturnType<typeof carefulTool>): AgentRuntime {
  return createRuntime()
    .model('m', model())
    .agent({ id: 'a', model: 'm', tools: [tool] })
    .store(store)
    .options({ leaseTtlMs: 5_000 })
    .build();
}

/** A thread whose `careful_action` was cut off mid-way, recovered to its `interrupted-call` ticket. */
async function interruptedAndAsked(store: LunationStore) {
  const dying = processOn(store);
  let started = false;
  await runtimeOn(
    dying.store,
    carefulTool('dies', () => {
      started = true;
      dying.crash();
    }),
  ).run({ threadId: 't', input: 'go', stream: false });
  await until(() => started);
  const waiting = await recover(runtimeOn(store, carefulTool('works')));
  expect(waiting.status).toBe('waiting');
  const ticket = waiting.openTickets[0];
  expect(ticket?.action).toBe('interrupted-call');
  const [entry] = await store.listToolExecutions(waiting.identity.runId);
  expect(entry).toMatchObject({ status: 'in-flight', attempts: 1 });
  return { ticketId: ticket?.id ?? '', runId: waiting.identity.runId };
}

/** Sends `decision` from a fresh process; returns the run's result and the commits that process made. */
async function decide(store: LunationStore, decision: ResumeDecision) {
  const deciding = processOn(store);
  const handle = await runtimeOn(deciding.store, carefulTool('works')).sendDecisions('t', [decision]);
  const result = await handle.run?.result;
  return { result, commits: deciding.commits };
}

/** The first commit whose thread state records `toolCallId` settled with a result. */
function commitSettling(commits: CheckpointCommit[]): CheckpointCommit | undefined {
  return commits.find((commit) => {
    const records = (commit.threadState?.['runtime.toolCalls'] ?? {}) as unknown as Record<
      string,
      ToolCallRecord
    >;
    return Object.values(records).some((record) => record.result !== undefined);
  });
}

describe.each(backends)('a decision that settles a call completes its ledger entry ($name)', (backend) => {
  it('an interrupted call answered "done": completed with the person’s result, in the commit that settles it', async () => {
    const store = await backend.open();
    const { ticketId, runId } = await interruptedAndAsked(store);
    const { result, commits } = await decide(store, {
      decisionId: 'd1',
      ticketId,
      action: 'resume',
      payload: { choice: 'done', result: { checked: 'by hand' } },
    });
    expect(result).toMatchObject({ status: 'done', finalText: 'finished' });
    const [part] = await toolResults(store);
    expect(part?.result).toMatchObject({ status: 'success', data: { checked: 'by hand' } });
    const ledger = await store.listToolExecutions(runId);
    expect(ledger).toEqual([
      expect.objectContaining({ status: 'completed', attempts: 1, result: part?.result }),
    ]);
    const settling = commitSettling(commits);
    expect(settling?.toolExecutions).toEqual([
      expect.objectContaining({ status: 'completed', result: part?.result }),
    ]);
  });

  it('an interrupted call answered "fail": completed with the error result', async () => {
    const store = await backend.open();
    const { ticketId, runId } = await interruptedAndAsked(store);
    const { result } = await decide(store, {
      decisionId: 'd1',
      ticketId,
      action: 'resume',
      payload: { choice: 'fail', message: 'left as it is' },
    });
    expect(result?.status).toBe('done');
    const [part] = await toolResults(store);
    expect(part?.result.status).toBe('error');
    expect(await store.listToolExecutions(runId)).toEqual([
      expect.objectContaining({ status: 'completed', result: part?.result }),
    ]);
  });

  it('a tool’s own question answered with the decision as its result: completed with it', async () => {
    const store = await backend.open();
    const waiting = await (
      await runtimeOn(store, carefulTool('asks')).run({ threadId: 't', input: 'go', stream: false })
    ).result;
    expect(waiting.status).toBe('waiting');
    expect(await store.listToolExecutions(waiting.identity.runId)).toEqual([
      expect.objectContaining({ status: 'in-flight', attempts: 1 }),
    ]);
    const { result, commits } = await decide(store, {
      decisionId: 'd1',
      ticketId: waiting.openTickets[0]?.id ?? '',
      action: 'resume',
      payload: { answer: 42 },
    });
    expect(result?.status).toBe('done');
    const [part] = await toolResults(store);
    expect(part?.result).toEqual({ status: 'success', data: { answer: 42 } });
    expect(await store.listToolExecutions(waiting.identity.runId)).toEqual([
      expect.objectContaining({ status: 'completed', attempts: 1, result: part?.result }),
    ]);
    expect(commitSettling(commits)?.toolExecutions).toEqual([
      expect.objectContaining({ status: 'completed', result: part?.result }),
    ]);
  });

  it('a tool’s own question declined: completed with the refusal', async () => {
    const store = await backend.open();
    const waiting = await (
      await runtimeOn(store, carefulTool('asks')).run({ threadId: 't', input: 'go', stream: false })
    ).result;
    const { result } = await decide(store, {
      decisionId: 'd1',
      ticketId: waiting.openTickets[0]?.id ?? '',
      action: 'cancel',
      reason: 'not now',
    });
    expect(result?.status).toBe('done');
    const [part] = await toolResults(store);
    expect(part?.result).toMatchObject({ status: 'error', metadata: { declined: true } });
    expect(await store.listToolExecutions(waiting.identity.runId)).toEqual([
      expect.objectContaining({ status: 'completed', result: part?.result }),
    ]);
  });
});
