import type { Message, ToolResultPart } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applyCompaction, summaryRange, truncateMessages } from '../src/context-policy.js';
import { createRuntime, defineTool, handoffTo } from '../src/index.js';
import { callTool, collectEvents, eventsOfType, reply, ScriptedModel } from '../src/testing/index.js';

describe('delegation', () => {
  it('runs a delegate as a child run whose events carry its identity and whose answer is the tool result', async () => {
    const parentModel = new ScriptedModel([
      callTool('agent_researcher', { task: 'find the capital of France' }),
      reply('Paris, says my researcher.'),
    ]);
    const childModel = new ScriptedModel([reply('Paris')]);
    const runtime = createRuntime()
      .model('parent', parentModel)
      .model('child', childModel)
      .agent({ id: 'boss', model: 'parent', delegates: ['researcher'] })
      .agent({ id: 'researcher', model: 'child', systemPrompt: 'You research.' })
      .build();
    const handle = await runtime.run({ threadId: 't', agentId: 'boss', input: 'capital of France?' });
    const events = await collectEvents(handle.events);
    const result = await handle.result;
    expect(result.finalText).toBe('Paris, says my researcher.');
    expect(parentModel.requests[0]?.tools.map((tool) => tool.name)).toEqual(['agent_researcher']);
    const childEvents = events.filter((event) => event.identity.runId !== handle.runId);
    expect(childEvents.length).toBeGreaterThan(0);
    const childStart = eventsOfType(childEvents, 'run-start')[0];
    expect(childStart?.identity).toMatchObject({
      agentId: 'researcher',
      parentRunId: handle.runId,
      parentToolCallId: 'call_1_1',
      origin: 'subagent',
    });
    expect(childEvents.map((event) => event.type)).toEqual([
      'run-start',
      'step-start',
      'text-delta',
      'step-end',
      'run-end',
    ]);
    expect(childModel.requests[0]?.messages.map((message) => message.role)).toEqual(['system', 'user']);
    const toolResult = eventsOfType(events, 'tool-result')[0];
    expect(toolResult?.result).toMatchObject({ status: 'success', message: 'Paris' });
    // The child's events arrive between the parent's tool-execution-start and tool-result.
    const order = events.map((event) => `${event.identity.agentId}:${event.type}`);
    expect(order.indexOf('researcher:run-start')).toBeGreaterThan(order.indexOf('boss:tool-execution-start'));
    expect(order.indexOf('researcher:run-end')).toBeLessThan(order.indexOf('boss:tool-result'));
  });

  it('cancels the child when the parent is cancelled', async () => {
    const parentModel = new ScriptedModel([
      callTool('agent_slow', { task: 'take your time' }),
      reply('never'),
    ]);
    const childModel = new ScriptedModel([{ text: 'zzz', delayMs: 10_000 }]);
    const runtime = createRuntime()
      .model('parent', parentModel)
      .model('child', childModel)
      .agent({ id: 'boss', model: 'parent', delegates: ['slow'] })
      .agent({ id: 'slow', model: 'child' })
      .build();
    const handle = await runtime.run({ threadId: 't', agentId: 'boss', input: 'go' });
    let childRunId: string | undefined;
    for await (const event of handle.events) {
      if (event.type === 'run-start' && event.identity.agentId === 'slow') {
        childRunId = event.identity.runId;
        handle.cancel('user stop');
      }
    }
    const result = await handle.result;
    expect(result.termination).toEqual({ type: 'cancelled', reason: 'user stop' });
    expect(childRunId).toBeDefined();
    expect(runtime.activeRun(childRunId ?? '')).toBeUndefined();
    expect(parentModel.callCount).toBe(1);
  });
});

describe('handoff', () => {
  it('switches the system prompt and tools the model receives at the next step', async () => {
    const transfer = defineTool({
      name: 'transfer_to_billing',
      description: 'Hand the conversation to billing',
      input: z.object({}),
      execute: (_, context) =>
        context.output({ status: 'success', message: 'Transferred to billing.' }, handoffTo('billing')),
    });
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds',
      input: z.object({}),
      execute: () => 'refunded',
    });
    const model = new ScriptedModel([
      callTool('transfer_to_billing', {}),
      reply('Billing here, how can I help?'),
      reply('Still billing.'),
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'triage', model: 'm', systemPrompt: 'You triage.', tools: [transfer] })
      .agent({ id: 'billing', model: 'm', systemPrompt: 'You do billing.', tools: [refund] })
      .build();
    const result = await runtime.generate({ threadId: 't', agentId: 'triage', input: 'I want a refund' });
    expect(result.finalText).toBe('Billing here, how can I help?');
    const [first, second] = model.requests;
    expect(first?.messages[0]?.content).toEqual([{ type: 'text', text: 'You triage.' }]);
    expect(first?.tools.map((tool) => tool.name)).toEqual(['transfer_to_billing']);
    expect(second?.messages[0]?.content).toEqual([{ type: 'text', text: 'You do billing.' }]);
    expect(second?.tools.map((tool) => tool.name)).toEqual(['refund']);
    // Same history, and the thread stays with billing for the next run.
    expect(second?.messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    await runtime.generate({ threadId: 't', input: 'thanks' });
    expect(model.requests[2]?.messages[0]?.content).toEqual([{ type: 'text', text: 'You do billing.' }]);
  });
});

describe('context management', () => {
  const text = (id: string, role: 'user' | 'system', value: string): Message => ({
    id,
    role,
    content: [{ type: 'text', text: value }],
  });
  const call = (id: string, callId: string): Message => ({
    id,
    role: 'assistant',
    content: [{ type: 'tool-call', toolCallId: callId, toolName: 't', arguments: '{}' }],
  });
  const result = (id: string, callId: string, size: number): Message => ({
    id,
    role: 'tool',
    content: [
      {
        type: 'tool-result',
        toolCallId: callId,
        toolName: 't',
        result: { status: 'success', data: 'x'.repeat(size) },
      },
    ],
  });

  it('truncates to the budget, keeps the system prompt and never separates a tool call from its result', () => {
    const history: Message[] = [
      text('s', 'system', 'sys'),
      text('u1', 'user', 'a'.repeat(400)),
      call('a1', 'c1'),
      result('r1', 'c1', 400),
      text('u2', 'user', 'b'.repeat(40)),
      call('a2', 'c2'),
      result('r2', 'c2', 400),
      text('u3', 'user', 'latest'),
    ];
    for (let budget = 0; budget <= 600; budget += 10) {
      const kept = truncateMessages(history, { maxTokens: budget, minRecentMessages: 1 });
      expect(kept[0]?.id).toBe('s');
      expect(kept.at(-1)?.id).toBe('u3');
      for (let index = 0; index < kept.length; index++) {
        const message = kept[index] as Message;
        if (message.role === 'tool') {
          const callId = (message.content[0] as ToolResultPart).toolCallId;
          const previous = kept[index - 1];
          expect(previous?.role === 'assistant' || previous?.role === 'tool').toBe(true);
          expect(
            kept.some((candidate) =>
              candidate.content.some((part) => part.type === 'tool-call' && part.toolCallId === callId),
            ),
          ).toBe(true);
        }
      }
    }
    const tight = truncateMessages(history, { maxTokens: 150, minRecentMessages: 1 });
    expect(tight.map((message) => message.id)).toEqual(['s', 'u2', 'a2', 'r2', 'u3']);
    expect(truncateMessages(history, { maxTokens: 10_000 }).map((message) => message.id)).toEqual(
      history.map((message) => message.id),
    );
  });

  it('compacts older history into a summary message that the next request contains', async () => {
    const model = new ScriptedModel((request) => {
      const last = request.messages.at(-1);
      const lastText = last?.content.map((part) => ('text' in part ? part.text : '')).join('') ?? '';
      if (lastText.startsWith('Summarise')) return reply('SUMMARY: user talked about apples');
      return reply(`answer ${request.messages.length}`);
    });
    const runtime = createRuntime()
      .model('m', model)
      .agent({
        id: 'a',
        model: 'm',
        context: { compaction: { thresholdTokens: 120, keepRecentMessages: 2 } },
      })
      .build();
    for (let turn = 0; turn < 4; turn++)
      await runtime.generate({ threadId: 't', input: `apples ${turn} ${'a'.repeat(200)}` });
    const summaryCalls = model.requests.filter((request) => {
      const last = request.messages.at(-1);
      return last?.content.some((part) => 'text' in part && part.text.startsWith('Summarise'));
    });
    expect(summaryCalls.length).toBeGreaterThan(0);
    const after = model.requests.at(-1);
    expect(after?.messages[0]?.role).toBe('system');
    expect(after?.messages[0]?.content[0]).toMatchObject({
      type: 'text',
      text: expect.stringContaining('SUMMARY: user talked about apples'),
    });
    expect(summaryRange(after?.messages[0] as Message)).toMatchObject({ fromSeq: 1 });
    // Nothing was deleted: the full history still holds every user message.
    const full = await runtime.generate({ threadId: 't', input: 'last' });
    expect(full.status).toBe('done');
    expect(applyCompaction([]).length).toBe(0);
  });
});
