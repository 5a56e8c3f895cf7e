import { describe, expect, it } from 'vitest';
import {
  addUsage,
  assertSpecificationVersion,
  emptyUsage,
  LunationError,
  messageText,
  specificationVersions,
  statusForTermination,
  toolResultText,
} from './index.js';
import {
  assertCheckpointCommit,
  assertId,
  assertInteger,
  assertObject,
  decodeCursor,
  encodeCursor,
  pageLimit,
} from './store-utils/index.js';

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

  it('encodes a page cursor as base64url JSON and refuses anything else with invalid-argument', () => {
    const cursor = encodeCursor([1_700_000_000_000, 'thread-é?>']);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(cursor).toBe(Buffer.from(JSON.stringify([1_700_000_000_000, 'thread-é?>'])).toString('base64url'));
    expect(decodeCursor(cursor, 'string')).toEqual([1_700_000_000_000, 'thread-é?>']);
    expect(decodeCursor(encodeCursor([5, 7]), 'number')).toEqual([5, 7]);
    for (const bad of ['', 'not a cursor', encodeCursor([5, 7]).slice(1), cursor]) {
      const tieBreaker = bad === cursor ? 'number' : 'string';
      expect(() => decodeCursor(bad, tieBreaker), bad).toThrow(/Invalid cursor/);
    }
  });

  it("accepts an adapter declaring its kind's specification version and names both versions otherwise", () => {
    expect(specificationVersions).toEqual({ model: 'v1', store: 'v2', dispatcher: 'v3' });
    expect(() =>
      assertSpecificationVersion('store', { specificationVersion: 'v2' }, 'store "s"'),
    ).not.toThrow();
    let error: unknown;
    try {
      assertSpecificationVersion('model', { specificationVersion: 'v0' }, 'model "old"');
    } catch (caught) {
      error = caught;
    }
    expect(LunationError.isInstance(error) && error.code).toBe('specification-mismatch');
    expect((error as Error).message).toBe(
      'The model "old" implements specification v0, but this runtime\'s contract defines model specification v1; use a version of the adapter built for model v1',
    );
    expect((error as LunationError).details).toEqual({ kind: 'model', expected: 'v1', actual: 'v0' });
    expect(() => assertSpecificationVersion('dispatcher', {}, 'dispatcher "d"')).toThrow(
      'The dispatcher "d" implements no specificationVersion',
    );
  });
});
