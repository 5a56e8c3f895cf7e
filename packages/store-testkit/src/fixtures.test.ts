import {
  assistantMessageSchema,
  LunationError,
  runRecordSchema,
  toolExecutionSchema,
  toolMessageSchema,
  userMessageSchema,
} from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import {
  expectLunationError,
  makeAssistantMessage,
  makeBeginToolExecutionInput,
  makeRunRecord,
  makeToolExecution,
  makeToolMessage,
  makeToolResult,
  makeUserMessage,
  uniqueId,
} from './fixtures.js';

describe('fixtures', () => {
  it('build values that pass the contract schemas', () => {
    expect(userMessageSchema.parse(makeUserMessage('hi'))).toEqual(makeUserMessageShape('hi'));
    expect(assistantMessageSchema.safeParse(makeAssistantMessage()).success).toBe(true);
    expect(toolMessageSchema.safeParse(makeToolMessage({ toolCallId: 'call-1' })).success).toBe(true);
    const run = makeRunRecord({ threadId: 't1', runId: 'r1' });
    expect(runRecordSchema.parse(run)).toEqual(run);
    expect(run.identity).toEqual({ threadId: 't1', runId: 'r1', agentId: 'assistant', origin: 'user' });
    expect(run.status).toBe('running');
    const entry = makeToolExecution({ threadId: 't1', runId: 'r1', toolCallId: 'c1' });
    expect(toolExecutionSchema.parse(entry)).toEqual(entry);
    expect(entry.idempotencyKey).toBe('r1:c1');
  });

  it('apply overrides and give every message a distinct id', () => {
    const run = makeRunRecord({ threadId: 't1' }, { status: 'done', steps: 3 });
    expect(run.status).toBe('done');
    expect(run.steps).toBe(3);
    const ids = new Set(Array.from({ length: 100 }, () => makeUserMessage().id));
    expect(ids.size).toBe(100);
    expect(uniqueId('thread')).not.toBe(uniqueId('thread'));
    expect(makeToolMessage({ toolCallId: 'c', result: makeToolResult(5) }).content[0]?.result).toEqual({
      status: 'success',
      data: 5,
    });
    const input = makeBeginToolExecutionInput(
      { threadId: 't', runId: 'r', toolCallId: 'c' },
      { leaseToken: 4 },
    );
    expect(input).toEqual({
      threadId: 't',
      runId: 'r',
      toolCallId: 'c',
      toolName: 'lookup',
      idempotencyKey: 'r:c',
      leaseToken: 4,
    });
  });
});

describe('expectLunationError', () => {
  it('returns the error when the code matches', async () => {
    const error = await expectLunationError(
      Promise.reject(new LunationError('not-found', 'gone', { details: { id: 1 } })),
      'not-found',
    );
    expect(error.details).toEqual({ id: 1 });
  });

  it('fails when the call resolves, throws something else, or throws another code', async () => {
    await expect(expectLunationError(Promise.resolve(42), 'not-found')).rejects.toThrow(
      'expected a LunationError "not-found", but the call resolved with 42',
    );
    await expect(expectLunationError(Promise.reject(new TypeError('boom')), 'not-found')).rejects.toThrow(
      'but got TypeError: boom',
    );
    await expect(
      expectLunationError(Promise.reject(new LunationError('store-conflict', 'conflict')), 'not-found'),
    ).rejects.toThrow(/error code/);
  });
});

function makeUserMessageShape(text: string): unknown {
  return { id: expect.any(String), role: 'user', content: [{ type: 'text', text }] };
}
