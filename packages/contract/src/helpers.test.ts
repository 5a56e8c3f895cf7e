import { describe, expect, it } from 'vitest';
import {
  addUsage,
  assertCheckpointCommit,
  assertId,
  assertInteger,
  assertObject,
  emptyUsage,
  messageText,
  pageLimit,
  statusForTermination,
  toolResultText,
} from './index.js';

describe('helpers', () => {
  it('sums usage field by field', () => {
    const a = {
      inputTokens: 1,
      outputTokens: 2,
      cacheReadTokens: 3,
      cacheWriteTokens: 4,
      reasoningTokens: 5,
    };
    expect(addUsage(a, a)).toEqual({
      inputTokens: 2,
      outputTokens: 4,
      cacheReadTokens: 6,
      cacheWriteTokens: 8,
      reasoningTokens: 10,
    });
    expect(addUsage(emptyUsage(), a)).toEqual(a);
  });

  it('renders tool results for the model: message first, then data', () => {
    expect(toolResultText({ status: 'success', data: { sum: 3 } })).toBe('{"sum":3}');
    expect(toolResultText({ status: 'success', data: 'plain' })).toBe('plain');
    expect(toolResultText({ status: 'error', message: 'bad', data: { x: 1 } })).toBe('bad');
    expect(toolResultText({ status: 'error' })).toBe('error');
  });

  it('maps terminations to run status and joins message text', () => {
    expect(statusForTermination({ type: 'suspended' })).toBe('waiting');
    expect(statusForTermination({ type: 'awaiting-tasks' })).toBe('waiting');
    expect(statusForTermination({ type: 'natural-end' })).toBe('done');
    expect(statusForTermination({ type: 'cancelled' })).toBe('done');
    expect(
      messageText({
        id: 'm',
        role: 'assistant',
        content: [
          { type: 'text', text: 'a' },
          { type: 'tool-call', toolCallId: 'c', toolName: 't', arguments: '{}' },
          { type: 'text', text: 'b' },
        ],
      }),
    ).toBe('ab');
  });
});

describe('store input checks', () => {
  it('name the value that failed: the number itself, a string quoted, otherwise its kind', () => {
    expect(() => pageLimit(0)).toThrow('limit must be an integer >= 1, got 0');
    expect(() => pageLimit(2.5)).toThrow('limit must be an integer >= 1, got 2.5');
    expect(() => assertId('', 'threadId')).toThrow('threadId must be a non-empty string, got ""');
    expect(() => assertObject([], 'threadState')).toThrow('threadState must be a JSON object, got an array');
    expect(() => assertInteger(null, 'leaseToken', 1)).toThrow(
      'leaseToken must be an integer >= 1, got null',
    );
  });

  it('a commit whose toolExecutions has a hole or a null entry is invalid-argument, not a TypeError', () => {
    const base = { threadId: 't', expectedMessageCount: 0, messages: [] };
    const entry = { runId: 'r', toolCallId: 'c', threadId: 't' };
    const sparse = [entry];
    sparse[2] = entry;
    for (const toolExecutions of [sparse, [entry, null]]) {
      expect(() => assertCheckpointCommit({ ...base, toolExecutions } as never)).toThrow(
        expect.objectContaining({
          code: 'invalid-argument',
          message: expect.stringContaining('toolExecutions[1]'),
        }),
      );
    }
  });
});
