import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  agentEventSchema,
  checkpointCommitSchema,
  contentPartSchema,
  leaseSchema,
  messageRecordSchema,
  messageSchema,
  modelRequestSchema,
  modelStreamPartSchema,
  resumeDecisionSchema,
  runIdentitySchema,
  runRecordSchema,
  suspensionTicketSchema,
  terminationReasonSchema,
  threadRecordSchema,
  toolCallSchema,
  toolDescriptorSchema,
  toolExecutionSchema,
  toolResultSchema,
  usageSchema,
} from './index.js';

const identity = { threadId: 't1', runId: 'r1', agentId: 'assistant', origin: 'user' as const };
const usage = {
  inputTokens: 10,
  outputTokens: 5,
  cacheReadTokens: 2,
  cacheWriteTokens: 0,
  reasoningTokens: 1,
};
const ticket = {
  id: 'k1',
  toolCallId: 'c1',
  toolName: 'read_file',
  arguments: '{"path":"a.txt"}',
  action: 'approve',
  message: 'Allow read_file?',
  parameters: { path: 'a.txt' },
  responseSchema: { type: 'object' },
  resumeMode: 'replay-tool-call' as const,
  runId: 'r1',
};
const assistant = {
  id: 'm2',
  role: 'assistant' as const,
  content: [
    { type: 'reasoning' as const, text: 'think', signature: 'sig' },
    { type: 'text' as const, text: 'Let me add.' },
    { type: 'tool-call' as const, toolCallId: 'c1', toolName: 'add', arguments: '{"a":1,"b":2}' },
  ],
};
const run = {
  identity,
  status: 'waiting' as const,
  termination: { type: 'suspended' as const },
  steps: 2,
  usage,
  openTickets: [ticket],
  state: { counter: 3 },
  finalText: '',
  createdAt: 1,
  updatedAt: 2,
};

interface Case {
  name: string;
  schema: z.ZodType;
  valid: unknown[];
  invalid: Array<{ value: unknown; path: Array<string | number>; message: RegExp }>;
}

const cases: Case[] = [
  {
    name: 'message',
    schema: messageSchema,
    valid: [
      { id: 'm0', role: 'system', content: [{ type: 'text', text: 'You are helpful.' }] },
      {
        id: 'm1',
        role: 'user',
        content: [
          { type: 'text', text: 'hi 👋 مرحبا' },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
          { type: 'image', source: { type: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } },
        ],
        metadata: { runId: 'r1' },
      },
      assistant,
      {
        id: 'm3',
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'add',
            result: { status: 'success', data: { sum: 3 } },
          },
        ],
      },
    ],
    invalid: [
      { value: { id: 'm1', role: 'robot', content: [] }, path: ['role'], message: /invalid|expected/i },
      {
        value: { id: 'm1', role: 'user', content: [{ type: 'text', text: 1 }] },
        path: ['content', 0, 'text'],
        message: /expected string/i,
      },
      {
        value: { id: '', role: 'system', content: [] },
        path: ['id'],
        message: />=1|too small/i,
      },
      {
        value: {
          id: 'm1',
          role: 'user',
          content: [{ type: 'image', source: { type: 'url', url: 'not a url' } }],
        },
        path: ['content', 0, 'source', 'url'],
        message: /url/i,
      },
    ],
  },
  {
    name: 'content part',
    schema: contentPartSchema,
    valid: [{ type: 'reasoning', text: 'opaque', redacted: true }],
    invalid: [{ value: { type: 'video' }, path: ['type'], message: /invalid|expected/i }],
  },
  {
    name: 'tool descriptor',
    schema: toolDescriptorSchema,
    valid: [{ name: 'add', description: 'Adds', parameters: { type: 'object', properties: {} } }],
    invalid: [
      {
        value: { name: 'has space', description: '', parameters: {} },
        path: ['name'],
        message: /tool names/,
      },
      { value: { name: 'add', description: 'x' }, path: ['parameters'], message: /expected record/i },
    ],
  },
  {
    name: 'tool call',
    schema: toolCallSchema,
    valid: [{ toolCallId: 'c1', toolName: 'add', arguments: '{not json' }],
    invalid: [
      { value: { toolCallId: 'c1', toolName: 'add' }, path: ['arguments'], message: /expected string/i },
    ],
  },
  {
    name: 'tool result',
    schema: toolResultSchema,
    valid: [
      { status: 'success', data: [1, 'two', null, { nested: true }] },
      { status: 'error', message: 'Invalid arguments: a: expected number', metadata: { code: 'x' } },
      { status: 'pending' },
    ],
    invalid: [{ value: { status: 'ok' }, path: ['status'], message: /expected one of/i }],
  },
  {
    name: 'model request',
    schema: modelRequestSchema,
    valid: [
      {
        messages: [assistant],
        tools: [{ name: 'add', description: 'Adds', parameters: { type: 'object' } }],
        toolChoice: { type: 'tool', toolName: 'add' },
        overrides: {
          model: 'gpt-x',
          temperature: 0.2,
          maxTokens: 100,
          topP: 0.9,
          reasoningEffort: { budgetTokens: 1024 },
          stopSequences: ['END'],
        },
        providerOptions: { anthropic: { promptCache: true } },
      },
      { messages: [], tools: [], toolChoice: 'auto', overrides: { reasoningEffort: 'high' } },
    ],
    invalid: [
      {
        value: { messages: [], tools: [], overrides: { temperature: 5 } },
        path: ['overrides', 'temperature'],
        message: /<=2|too big/i,
      },
      {
        value: { messages: [], tools: [], toolChoice: 'sometimes' },
        path: ['toolChoice'],
        message: /invalid/i,
      },
    ],
  },
  {
    name: 'stream part',
    schema: modelStreamPartSchema,
    valid: [
      { type: 'text-delta', delta: 'Hel' },
      { type: 'reasoning-delta', delta: '', signature: 'sig' },
      { type: 'tool-call-start', toolCallId: 'c1', toolName: 'add' },
      { type: 'tool-call-delta', toolCallId: 'c1', argumentsDelta: '{"a":' },
      { type: 'tool-call-end', toolCallId: 'c1', toolName: 'add', arguments: '{"a":1}' },
      { type: 'usage', usage },
      { type: 'finish', stopReason: 'tool-use', rawStopReason: 'tool_calls' },
    ],
    invalid: [
      { value: { type: 'finish', stopReason: 'done' }, path: ['stopReason'], message: /expected one of/i },
      {
        value: { type: 'usage', usage: { ...usage, inputTokens: -1 } },
        path: ['usage', 'inputTokens'],
        message: />=0/,
      },
    ],
  },
  {
    name: 'usage',
    schema: usageSchema,
    valid: [usage],
    invalid: [{ value: { ...usage, outputTokens: 1.5 }, path: ['outputTokens'], message: /int/i }],
  },
  {
    name: 'run identity',
    schema: runIdentitySchema,
    valid: [identity, { ...identity, parentRunId: 'r0', parentToolCallId: 'c0', origin: 'subagent' }],
    invalid: [{ value: { ...identity, origin: 'robot' }, path: ['origin'], message: /expected one of/i }],
  },
  {
    name: 'termination reason',
    schema: terminationReasonSchema,
    valid: [
      { type: 'natural-end' },
      { type: 'stopped', code: 'max-rounds', detail: '50 rounds' },
      { type: 'cancelled' },
      { type: 'blocked', reason: 'denied' },
      { type: 'suspended' },
      { type: 'awaiting-tasks' },
      { type: 'error', error: { code: 'overloaded', message: 'try later', retryable: true } },
    ],
    invalid: [{ value: { type: 'stopped' }, path: ['code'], message: /expected string/i }],
  },
  {
    name: 'suspension ticket',
    schema: suspensionTicketSchema,
    valid: [ticket],
    invalid: [
      { value: { ...ticket, resumeMode: 'later' }, path: ['resumeMode'], message: /expected one of/i },
    ],
  },
  {
    name: 'resume decision',
    schema: resumeDecisionSchema,
    valid: [
      { decisionId: 'd1', ticketId: 'k1', action: 'resume', payload: { ok: true } },
      { decisionId: 'd2', ticketId: 'k1', action: 'cancel', reason: 'no' },
    ],
    invalid: [
      { value: { decisionId: 'd1', ticketId: 'k1', action: 'maybe' }, path: ['action'], message: /one of/ },
    ],
  },
  {
    name: 'agent event',
    schema: agentEventSchema,
    valid: [
      { type: 'run-start', identity, seq: 0, input: [], resumed: false, timestamp: 1 },
      { type: 'text-delta', identity, seq: 3, step: 1, delta: 'hi' },
      { type: 'tool-call-suspended', identity, seq: 4, ticket },
      {
        type: 'tool-result',
        identity,
        seq: 5,
        step: 1,
        toolCallId: 'c1',
        toolName: 'add',
        status: 'succeeded',
        result: { status: 'success', data: 3 },
        fromLedger: false,
      },
      {
        type: 'run-end',
        identity,
        seq: 6,
        status: 'waiting',
        termination: { type: 'suspended' },
        finalText: '',
        steps: 1,
        usage,
        openTickets: [ticket],
        timestamp: 2,
      },
    ],
    invalid: [
      { value: { type: 'step-start', identity, seq: 0 }, path: ['step'], message: /expected number/i },
      { value: { type: 'nope', identity, seq: 0 }, path: ['type'], message: /invalid/i },
    ],
  },
  {
    name: 'store records',
    schema: checkpointCommitSchema,
    valid: [
      {
        threadId: 't1',
        expectedMessageCount: 2,
        messages: [assistant],
        run,
        threadState: { approvals: ['read_file'] },
        toolExecutions: [
          {
            runId: 'r1',
            toolCallId: 'c1',
            threadId: 't1',
            toolName: 'add',
            idempotencyKey: 'r1:c1',
            status: 'completed',
            result: { status: 'success', data: 3 },
            attempts: 1,
            startedAt: 1,
            completedAt: 2,
          },
        ],
        leaseToken: 4,
      },
    ],
    invalid: [
      {
        value: { threadId: 't1', expectedMessageCount: -1, messages: [] },
        path: ['expectedMessageCount'],
        message: />=0/,
      },
      {
        value: { threadId: 't1', expectedMessageCount: 0, messages: [], leaseToken: 0 },
        path: ['leaseToken'],
        message: />0/,
      },
    ],
  },
];

describe.each(cases)('$name schema', ({ schema, valid, invalid }) => {
  it.each(valid.map((value, index) => [index, value]))(
    'accepts valid value #%i and round-trips it through JSON',
    (_, value) => {
      const parsed = schema.parse(value);
      expect(parsed).toEqual(value);
      expect(schema.parse(JSON.parse(JSON.stringify(parsed)))).toEqual(value);
    },
  );

  it.each(invalid.map((entry, index) => [index, entry] as const))(
    'rejects malformed value #%i naming the field',
    (_, entry) => {
      const result = schema.safeParse(entry.value);
      expect(result.success).toBe(false);
      const issue = result.error?.issues.find((candidate) =>
        JSON.stringify(candidate.path).endsWith(JSON.stringify(entry.path).slice(1)),
      );
      expect(issue, JSON.stringify(result.error?.issues)).toBeDefined();
      expect(issue?.message).toMatch(entry.message);
    },
  );
});

describe('store record schemas', () => {
  it('accept thread, message, run, ledger and lease records', () => {
    const thread = {
      id: 't1',
      resourceId: 'u1',
      metadata: { title: 'Hi' },
      messageCount: 2,
      createdAt: 1,
      updatedAt: 2,
    };
    expect(threadRecordSchema.parse(thread)).toEqual(thread);
    const record = { threadId: 't1', seq: 1, message: assistant, runId: 'r1', createdAt: 1 };
    expect(messageRecordSchema.parse(record)).toEqual(record);
    expect(runRecordSchema.parse(run)).toEqual(run);
    const lease = { threadId: 't1', owner: 'pid-1', runId: 'r1', token: 3, renewedAt: 4, expiresAt: 10 };
    expect(leaseSchema.parse(lease)).toEqual(lease);
    expect(leaseSchema.parse({ ...lease, incarnation: 'life-1' })).toEqual({
      ...lease,
      incarnation: 'life-1',
    });
    expect(leaseSchema.safeParse({ ...lease, renewedAt: undefined }).success).toBe(false);
    const execution = {
      runId: 'r1',
      toolCallId: 'c1',
      threadId: 't1',
      toolName: 'add',
      idempotencyKey: 'r1:c1',
      status: 'in-flight',
      attempts: 2,
      startedAt: 1,
    };
    expect(toolExecutionSchema.parse(execution)).toEqual(execution);
  });

  it('reject a message record with seq 0 and a run record with a bad status', () => {
    expect(
      messageRecordSchema.safeParse({ threadId: 't1', seq: 0, message: assistant, createdAt: 1 }).success,
    ).toBe(false);
    const result = runRecordSchema.safeParse({ ...run, status: 'paused' });
    expect(result.error?.issues[0]?.path).toEqual(['status']);
  });
});
