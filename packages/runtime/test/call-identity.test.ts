import type { AssistantMessage, Message, ToolMessage } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRuntime, defineTool, handoffTo } from '../src/index.js';
import { callTool, reply, ScriptedModel } from '../src/testing/index.js';

// Issue 23: the runtime owns each call's identity. Providers that number their ids per model instance or per
// response reuse an id in a later response of the same run; the call must run like any other.

function calls(messages: readonly Message[]) {
  return messages
    .filter((message): message is AssistantMessage => message.role === 'assistant')
    .flatMap((message) => message.content.filter((part) => part.type === 'tool-call'));
}

function results(messages: readonly Message[]) {
  return messages
    .filter((message): message is ToolMessage => message.role === 'tool')
    .flatMap((message) => message.content);
}

describe('runtime-owned call identity', () => {
  it('a handoff between two ScriptedModel agents runs B’s tool although both models number ids alike', async () => {
    const ran: Array<{ tool: string; toolCallId: string; key: string }> = [];
    const transfer = defineTool({
      name: 'transfer_to_billing',
      description: 'Hand the conversation to billing',
      input: z.object({}),
      execute: (_, context) => {
        ran.push({ tool: 'transfer', toolCallId: context.toolCallId, key: context.idempotencyKey });
        return context.output({ status: 'success', message: 'Transferred.' }, handoffTo('billing'));
      },
    });
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds',
      input: z.object({ amount: z.number() }),
      execute: ({ amount }, context) => {
        ran.push({ tool: 'refund', toolCallId: context.toolCallId, key: context.idempotencyKey });
        return { refunded: amount };
      },
    });
    const triage = new ScriptedModel([callTool('transfer_to_billing', {})]);
    const billing = new ScriptedModel([callTool('refund', { amount: 12 }), reply('Refunded 12.')]);
    const runtime = createRuntime()
      .model('triage', triage)
      .model('billing', billing)
      .agent({ id: 'triage', model: 'triage', tools: [transfer] })
      .agent({ id: 'billing', model: 'billing', tools: [refund] })
      .build();
    const result = await runtime.generate({ threadId: 't', agentId: 'triage', input: 'refund me' });
    expect(result).toMatchObject({ status: 'done', termination: { type: 'natural-end' } });
    expect(result.finalText).toBe('Refunded 12.');
    // Both models called their first tool "call_1_1"; both calls ran, each once, with keys of their own.
    expect(ran.map((entry) => [entry.tool, entry.toolCallId])).toEqual([
      ['transfer', 'call_1_1'],
      ['refund', 'call_1_1'],
    ]);
    expect(new Set(ran.map((entry) => entry.key)).size).toBe(2);
    const answered = results(result.messages);
    expect(answered.map((part) => [part.toolCallId, part.result.status])).toEqual([
      ['call_1_1', 'success'],
      ['call_1_1', 'success'],
    ]);
    expect(answered[1]?.result.data).toEqual({ refunded: 12 });
    // The wire keeps the provider's ids: billing's second request sends its own "call_1_1" back.
    const sent = calls(billing.requests[1]?.messages ?? []);
    expect(sent.map((part) => part.toolCallId)).toEqual(['call_1_1', 'call_1_1']);
    // The runtime's ids differ and are kept in the assistant messages.
    const own = calls(result.messages).map((part) => part.callId);
    expect(own).toHaveLength(2);
    expect(own[0]).not.toBe(own[1]);
  });

  it('a provider reusing an id in a later response of one run gets both calls run', async () => {
    let count = 0;
    const bump = defineTool({
      name: 'bump',
      description: 'Counts',
      input: z.object({}),
      execute: () => ++count,
    });
    const model = new ScriptedModel([
      { toolCalls: [{ toolName: 'bump', arguments: {}, toolCallId: 'same' }] },
      { toolCalls: [{ toolName: 'bump', arguments: {}, toolCallId: 'same' }] },
      reply('bumped twice'),
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [bump] })
      .build();
    const result = await runtime.generate({ threadId: 't', input: 'go' });
    expect(result.finalText).toBe('bumped twice');
    expect(count).toBe(2);
    expect(results(result.messages).map((part) => [part.toolCallId, part.result.data])).toEqual([
      ['same', 1],
      ['same', 2],
    ]);
  });

  it('duplicate ids within one response stay an error result for the repeated call', async () => {
    let count = 0;
    const bump = defineTool({
      name: 'bump',
      description: 'Counts',
      input: z.object({}),
      execute: () => ++count,
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { toolName: 'bump', arguments: {}, toolCallId: 'dup' },
          { toolName: 'bump', arguments: {}, toolCallId: 'dup' },
        ],
      },
      reply('done'),
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [bump] })
      .build();
    const result = await runtime.generate({ threadId: 't', input: 'go' });
    expect(count).toBe(1);
    const parts = results(result.messages);
    expect(parts.map((part) => part.result.status)).toEqual(['success', 'error']);
    expect(parts[0]?.toolCallId).toBe('dup');
    expect(parts[1]?.toolCallId).not.toBe('dup');
    expect(parts[1]?.result.message).toMatch(/same id as another call of this answer/);
  });
});
