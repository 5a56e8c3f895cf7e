import {
  emptyUsage,
  type InterruptPolicy,
  type LunationStore,
  type ModelRequest,
  type ResumeDecision,
  type RunRecord,
  type ToolResultPart,
} from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRuntime, defineTool, permissionPlugin } from '../../src/index.js';
import type { ToolCallRecord } from '../../src/loop/call-records.js';
import { reply, ScriptedModel, type ScriptedResponse } from '../../src/testing/index.js';
import { loopBackends, processOn, recover, toolResults as results, until } from './loop-processes.js';

// One test per row of the recovery table in `src/loop/tool-calls.ts`: each drives the loop (scripted model, real
// store) into the row's state, usually by a "process" that dies, and checks the row's rule from the store and
// from what the tools did. A "process" is a runtime over the store; a dead one never reaches the store again.

const backends = loopBackends('lunation-recovery-table');

interface Execution {
  process: string;
  tool: string;
  key: string;
  rerun: boolean;
  decision: string | undefined;
}

interface ToolOptions {
  /** Dies (and never returns) on this tool's first execution in this process. */
  crash?: () => void;
  policy?: InterruptPolicy;
  /** Looks at the store as the tool starts. */
  onStart?: () => Promise<void>;
}

function effect(name: string, log: Execution[], process: string, options: ToolOptions = {}) {
  return defineTool({
    name,
    description: name,
    input: z.object({}),
    ...(options.policy ? { interruptPolicy: options.policy } : {}),
    execute: async (_input, context) => {
      log.push({
        process,
        tool: name,
        key: context.idempotencyKey,
        rerun: context.rerun,
        decision: context.decision?.decisionId,
      });
      await options.onStart?.();
      if (options.crash) {
        options.crash();
        await new Promise(() => {});
      }
      return `${name} done`;
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

function calling(...names: string[]): ScriptedResponse[] {
  return [{ toolCalls: names.map((toolName) => ({ toolName, arguments: {} })) }, reply('done')];
}

function runtimeOn(store: LunationStore, model: ScriptedModel, tools: ReturnType<typeof effect>[]) {
  return createRuntime()
    .model('m', model)
    .agent({
      id: 'a',
      model: 'm',
      tools,
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'gated_*', decision: 'ask' }] } }],
    })
    .store(store)
    .options({ leaseTtlMs: 5_000 })
    .build();
}

async function records(store: LunationStore) {
  return Object.values(
    ((await store.getThreadState('t'))['runtime.toolCalls'] ?? {}) as Record<string, ToolCallRecord>,
  );
}

const approve = (ticketId: string | undefined, decisionId = 'd1'): ResumeDecision => ({
  decisionId,
  ticketId: ticketId ?? '',
  action: 'resume',
});

/** A thread whose last assistant message calls `toolName` and nothing else was ever written for the call. */
async function strandedCall(
  store: LunationStore,
  toolName: string,
  run: Pick<RunRecord, 'status' | 'termination'>,
) {
  await store.createThread({ id: 't' });
  const now = Date.now();
  const record: RunRecord = {
    identity: { threadId: 't', runId: 'r0', agentId: 'a', origin: 'user' },
    ...run,
    steps: 1,
    usage: emptyUsage(),
    openTickets: [],
    state: {},
    createdAt: now,
    updatedAt: now,
  };
  await store.commit({
    threadId: 't',
    expectedMessageCount: 0,
    messages: [
      { id: 'm1', role: 'user', content: [{ type: 'text', text: 'go' }] },
      {
        id: 'm2',
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'c1', callId: 'lc_1', toolName, arguments: '{}' }],
        metadata: { runId: 'r0', step: 1 },
      },
    ],
    run: record,
  });
}

describe.each(backends)('the recovery table, row by row ($name)', (backend) => {
  it('record with a result: the recorded result; never executed, the ledger not even asked', async () => {
    const store = await backend.open();
    const log: Execution[] = [];
    const model = scripted(calling('free_a', 'gated_b'));
    const first = runtimeOn(store, model, [effect('free_a', log, 'A'), effect('gated_b', log, 'A')]);
    const waiting = await (await first.run({ threadId: 't', input: 'go', stream: false })).result;
    expect(waiting.status).toBe('waiting');
    expect((await records(store)).find((record) => record.toolName === 'free_a')?.result).toBeDefined();

    const second = processOn(store);
    const runtime = runtimeOn(second.store, model, [effect('free_a', log, 'B'), effect('gated_b', log, 'B')]);
    const outcome = await runtime.sendDecisions('t', [approve(waiting.openTickets[0]?.id)]);
    expect((await outcome.run?.result)?.status).toBe('done');
    expect(log.map((entry) => `${entry.process}:${entry.tool}`)).toEqual(['A:free_a', 'B:gated_b']);
    // free_a's record answers it: no ledger read or start for it; gated_b never started, so C0 claims it.
    expect(second.begun()).toEqual([]);
    expect(second.looked()).toEqual([]);
    expect(second.claimed()).toEqual(['gated_b']);
    expect((await results(store)).map((part) => part.result)).toEqual([
      { status: 'success', data: 'free_a done' },
      { status: 'success', data: 'gated_b done' },
    ]);
  });

  it('suspended, its decision arrives: C0 records it (resuming, run running) and claims it before the call runs with it', async () => {
    const store = await backend.open();
    const log: Execution[] = [];
    const model = scripted(calling('gated_b'));
    const first = runtimeOn(store, model, [effect('gated_b', log, 'A')]);
    const waiting = await (await first.run({ threadId: 't', input: 'go', stream: false })).result;
    const seen: Array<{
      status: string;
      decision: string | undefined;
      run: string | undefined;
      ledger: string;
    }> = [];
    const onStart = async () => {
      const [record] = await records(store);
      const runId = record?.runId ?? '';
      seen.push({
        status: record?.status ?? 'none',
        decision: record?.decision?.decisionId,
        run: (await store.getLatestRun('t'))?.status,
        ledger: (await store.listToolExecutions(runId)).map((entry) => entry.status).join(),
      });
    };
    const second = processOn(store);
    const runtime = runtimeOn(second.store, model, [effect('gated_b', log, 'B', { onStart })]);
    const outcome = await runtime.sendDecisions('t', [approve(waiting.openTickets[0]?.id)]);
    expect((await outcome.run?.result)?.status).toBe('done');
    expect(seen).toEqual([{ status: 'resuming', decision: 'd1', run: 'running', ledger: 'in-flight' }]);
    // One write before the call starts: C0 holds the decision and the call's in-flight ledger entry.
    expect(second.begun()).toEqual([]);
    expect(second.claimed()).toEqual(['gated_b']);
    expect(log).toMatchObject([{ process: 'B', tool: 'gated_b', decision: 'd1', rerun: false }]);
  });

  it('suspended, declined: settled with the refusal; never executed', async () => {
    const store = await backend.open();
    const log: Execution[] = [];
    const model = scripted(calling('gated_b'));
    const first = runtimeOn(store, model, [effect('gated_b', log, 'A')]);
    const waiting = await (await first.run({ threadId: 't', input: 'go', stream: false })).result;
    const runtime = runtimeOn(store, model, [effect('gated_b', log, 'B')]);
    const outcome = await runtime.sendDecisions('t', [
      { decisionId: 'd1', ticketId: waiting.openTickets[0]?.id ?? '', action: 'cancel', reason: 'no' },
    ]);
    expect((await outcome.run?.result)?.status).toBe('done');
    expect(log).toEqual([]);
    expect((await results(store))[0]?.result).toMatchObject({
      status: 'error',
      metadata: { declined: true },
    });
  });

  it('suspended, decisions for other tickets only: C0 records those, nothing runs, the run waits on the rest', async () => {
    const store = await backend.open();
    const log: Execution[] = [];
    const model = scripted(calling('gated_b', 'gated_c'));
    const first = runtimeOn(store, model, [effect('gated_b', log, 'A'), effect('gated_c', log, 'A')]);
    const waiting = await (await first.run({ threadId: 't', input: 'go', stream: false })).result;
    const [ticketB, ticketC] = waiting.openTickets;
    const runtime = runtimeOn(store, model, [effect('gated_b', log, 'B'), effect('gated_c', log, 'B')]);
    const partial = await runtime.sendDecisions('t', [approve(ticketB?.id, 'd1')]);
    expect(partial).toMatchObject({ applied: ['d1'], openTickets: [{ id: ticketC?.id }] });
    expect(partial.run).toBeUndefined();
    expect(log).toEqual([]);
    const latest = await store.getLatestRun('t');
    expect(latest).toMatchObject({ status: 'waiting', openTickets: [{ id: ticketC?.id }] });
    expect(latest?.identity.runId).toBe(waiting.identity.runId);
    expect((await records(store)).map((record) => [record.toolName, record.status])).toEqual([
      ['gated_b', 'resuming'],
      ['gated_c', 'suspended'],
    ]);

    const last = await runtime.sendDecisions('t', [approve(ticketC?.id, 'd2')]);
    expect((await last.run?.result)?.status).toBe('done');
    expect(log.map((entry) => [entry.tool, entry.decision])).toEqual([
      ['gated_b', 'd1'],
      ['gated_c', 'd2'],
    ]);
  });

  it('suspended, no decision (recovery): stays suspended, the run waits with its ticket; never executed', async () => {
    const store = await backend.open();
    const log: Execution[] = [];
    const model = scripted(calling('free_a', 'gated_b'));
    const dying = processOn(store);
    const first = runtimeOn(dying.store, model, [
      effect('free_a', log, 'A', { crash: dying.crash }),
      effect('gated_b', log, 'A'),
    ]);
    await first.run({ threadId: 't', input: 'go', stream: false });
    await until(() => log.length === 1);

    const recovered = await recover(
      runtimeOn(store, model, [effect('free_a', log, 'B'), effect('gated_b', log, 'B')]),
    );
    expect(recovered.status).toBe('waiting');
    expect(recovered.openTickets.map((ticket) => ticket.toolName)).toEqual(['gated_b']);
    expect(log.map((entry) => `${entry.process}:${entry.tool}`)).toEqual(['A:free_a', 'B:free_a']);
  });

  it('suspended, new input instead: answered as superseded, the waiting run ends cancelled (C0); never executed', async () => {
    const store = await backend.open();
    const log: Execution[] = [];
    const model = scripted(calling('gated_b'));
    const first = runtimeOn(store, model, [effect('gated_b', log, 'A')]);
    const waiting = await (await first.run({ threadId: 't', input: 'go', stream: false })).result;
    const runtime = runtimeOn(store, model, [effect('gated_b', log, 'B')]);
    const next = await (await runtime.run({ threadId: 't', input: 'never mind', stream: false })).result;
    expect(next.status).toBe('done');
    expect(next.identity.runId).not.toBe(waiting.identity.runId);
    expect(log).toEqual([]);
    expect(await store.getRun(waiting.identity.runId)).toMatchObject({
      status: 'done',
      termination: { type: 'cancelled', reason: 'superseded by a new message' },
      openTickets: [],
    });
    const messages = (await store.listMessages('t')).map((record) => record.message);
    expect(messages.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'user',
      'assistant',
    ]);
    expect((messages[2]?.content as ToolResultPart[] | undefined)?.[0]?.result).toMatchObject({
      metadata: { superseded: true },
    });
    expect(await records(store)).toEqual([]);
  });

  it('resuming (decided), the ledger completed: the ledger result; never executed again', async () => {
    const store = await backend.open();
    const log: Execution[] = [];
    const model = scripted(calling('gated_b', 'gated_c'));
    const first = runtimeOn(store, model, [effect('gated_b', log, 'A'), effect('gated_c', log, 'A')]);
    const waiting = await (await first.run({ threadId: 't', input: 'go', stream: false })).result;
    const dying = processOn(store);
    const second = runtimeOn(dying.store, model, [
      effect('gated_b', log, 'B'),
      effect('gated_c', log, 'B', { crash: dying.crash }),
    ]);
    await second.sendDecisions(
      't',
      waiting.openTickets.map((ticket, index) => approve(ticket.id, `d${index}`)),
    );
    await until(() => log.length === 2);

    const third = processOn(store);
    const recovered = await recover(
      runtimeOn(third.store, model, [effect('gated_b', log, 'C'), effect('gated_c', log, 'C')]),
    );
    expect(recovered.status).toBe('done');
    expect(log.map((entry) => [entry.process, entry.tool, entry.decision, entry.rerun])).toEqual([
      ['B', 'gated_b', 'd0', false],
      ['B', 'gated_c', 'd1', false],
      ['C', 'gated_c', 'd1', true],
    ]);
    expect(log[1]?.key).toBe(log[2]?.key);
    expect((await results(store)).map((part) => part.result)).toEqual([
      { status: 'success', data: 'gated_b done' },
      { status: 'success', data: 'gated_c done' },
    ]);
  });

  it('no record, ledger completed: the ledger result; never executed again', async () => {
    const store = await backend.open();
    const log: Execution[] = [];
    const model = scripted(calling('free_a', 'free_b'));
    const dying = processOn(store);
    const first = runtimeOn(dying.store, model, [
      effect('free_a', log, 'A'),
      effect('free_b', log, 'A', { crash: dying.crash }),
    ]);
    await first.run({ threadId: 't', input: 'go', stream: false });
    await until(() => log.length === 2);
    expect(await records(store)).toEqual([]);

    const second = processOn(store);
    const recovered = await recover(
      runtimeOn(second.store, model, [effect('free_a', log, 'B'), effect('free_b', log, 'B')]),
    );
    expect(recovered.status).toBe('done');
    expect(log.filter((entry) => entry.tool === 'free_a').map((entry) => entry.process)).toEqual(['A']);
    expect(second.begun()).not.toContain('free_a');
    expect((await results(store))[0]?.result).toEqual({ status: 'success', data: 'free_a done' });
  });

  it('no record, ledger in-flight, policy rerun: runs again with the same key and rerun: true', async () => {
    const store = await backend.open();
    const log: Execution[] = [];
    const model = scripted(calling('free_a'));
    const dying = processOn(store);
    const first = runtimeOn(dying.store, model, [effect('free_a', log, 'A', { crash: dying.crash })]);
    await first.run({ threadId: 't', input: 'go', stream: false });
    await until(() => log.length === 1);

    const recovered = await recover(runtimeOn(store, model, [effect('free_a', log, 'B')]));
    expect(recovered.status).toBe('done');
    expect(log.map((entry) => [entry.process, entry.rerun])).toEqual([
      ['A', false],
      ['B', true],
    ]);
    expect(log[0]?.key).toBe(log[1]?.key);
  });

  it('no record, ledger in-flight, policy fail: an error result, the ledger completed with it; never runs again', async () => {
    const store = await backend.open();
    const log: Execution[] = [];
    const model = scripted(calling('free_a'));
    const dying = processOn(store);
    const first = runtimeOn(dying.store, model, [
      effect('free_a', log, 'A', { crash: dying.crash, policy: 'fail' }),
    ]);
    await first.run({ threadId: 't', input: 'go', stream: false });
    await until(() => log.length === 1);

    const recovered = await recover(
      runtimeOn(store, model, [effect('free_a', log, 'B', { policy: 'fail' })]),
    );
    expect(recovered.status).toBe('done');
    expect(log.map((entry) => entry.process)).toEqual(['A']);
    const [part] = await results(store);
    expect(part?.result).toMatchObject({ status: 'error' });
    const ledger = await store.listToolExecutions(recovered.identity.runId);
    expect(ledger).toMatchObject([{ status: 'completed', result: { status: 'error' } }]);
  });

  it('no record, no ledger entry (the run running): through ToolGate again; never executed unchecked', async () => {
    const store = await backend.open();
    const log: Execution[] = [];
    await strandedCall(store, 'gated_b', { status: 'running' });
    const recovered = await recover(
      runtimeOn(store, scripted(calling('gated_b')), [effect('gated_b', log, 'B')]),
    );
    expect(recovered.status).toBe('waiting');
    expect(recovered.openTickets.map((ticket) => ticket.toolName)).toEqual(['gated_b']);
    expect(log).toEqual([]);
  });

  it('no record, and the run is not running: cancelled; nothing runs behind the user’s back', async () => {
    const store = await backend.open();
    const log: Execution[] = [];
    await strandedCall(store, 'free_a', {
      status: 'done',
      termination: { type: 'error', error: { code: 'internal', message: 'gone', retryable: false } },
    });
    const next = await recover(
      runtimeOn(store, scripted(calling('free_a')), [effect('free_a', log, 'B')]),
      'again',
    );
    expect(next.status).toBe('done');
    expect(log).toEqual([]);
    expect((await results(store))[0]?.result).toMatchObject({
      status: 'error',
      metadata: { cancelled: true },
    });
  });
});
