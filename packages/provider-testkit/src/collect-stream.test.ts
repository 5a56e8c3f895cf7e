import type { ModelStreamPart } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { assertStreamInvariants, collectStream, summarizeParts } from './collect-stream.js';
import { formatServerSentEvent, scriptedStopReason } from './provider-wire.js';

const usage = {
  inputTokens: 1,
  outputTokens: 2,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};

const valid: ModelStreamPart[] = [
  { type: 'reasoning-delta', delta: 'Think' },
  { type: 'reasoning-delta', delta: '', signature: 'sig' },
  { type: 'reasoning-delta', delta: 'opaque', redacted: true },
  { type: 'text-delta', delta: 'Hi' },
  { type: 'tool-call-start', toolCallId: 'a', toolName: 'f' },
  { type: 'tool-call-start', toolCallId: 'b', toolName: 'g' },
  { type: 'tool-call-delta', toolCallId: 'a', argumentsDelta: '{"x":' },
  { type: 'tool-call-delta', toolCallId: 'b', argumentsDelta: '{}' },
  { type: 'tool-call-delta', toolCallId: 'a', argumentsDelta: '1}' },
  { type: 'tool-call-end', toolCallId: 'b', toolName: 'g', arguments: '{}' },
  { type: 'tool-call-end', toolCallId: 'a', toolName: 'f', arguments: '{"x":1}' },
  { type: 'usage', usage },
  { type: 'finish', stopReason: 'tool-use', rawStopReason: 'tool_calls' },
];

describe('assertStreamInvariants', () => {
  it('accepts a well-formed stream', () => {
    expect(() => assertStreamInvariants(valid)).not.toThrow();
  });

  it.each<[string, ModelStreamPart[], RegExp]>([
    ['a part after finish', [...valid, { type: 'text-delta', delta: 'late' }], /after `finish`/],
    [
      'content after usage',
      [
        { type: 'usage', usage },
        { type: 'text-delta', delta: 'x' },
      ],
      /after `usage`/,
    ],
    [
      'two usage parts',
      [
        { type: 'usage', usage },
        { type: 'usage', usage },
      ],
      /second `usage`/,
    ],
    [
      'a delta without a start',
      [{ type: 'tool-call-delta', toolCallId: 'z', argumentsDelta: '{' }],
      /not open/,
    ],
    [
      'end arguments that differ from the pieces',
      [
        { type: 'tool-call-start', toolCallId: 'a', toolName: 'f' },
        { type: 'tool-call-delta', toolCallId: 'a', argumentsDelta: '{"x":1}' },
        { type: 'tool-call-end', toolCallId: 'a', toolName: 'f', arguments: '{"x":2}' },
      ],
      /differ from the streamed pieces/,
    ],
    [
      'a call left open at finish',
      [
        { type: 'tool-call-start', toolCallId: 'a', toolName: 'f' },
        { type: 'finish', stopReason: 'tool-use' },
      ],
      /never ended/,
    ],
    [
      'a start repeated',
      [
        { type: 'tool-call-start', toolCallId: 'a', toolName: 'f' },
        { type: 'tool-call-start', toolCallId: 'a', toolName: 'f' },
      ],
      /started twice/,
    ],
    [
      'a part that fails its schema',
      [{ type: 'tool-call-start', toolCallId: '', toolName: 'f' }],
      /modelStreamPartSchema/,
    ],
  ])('rejects %s', (_label, parts, message) => {
    expect(() => assertStreamInvariants(parts)).toThrow(message);
  });
});

describe('summarizeParts', () => {
  it('adds up text, reasoning blocks, tool calls, usage and the stop reason', () => {
    expect(summarizeParts(valid)).toEqual({
      text: 'Hi',
      reasoning: [
        { text: 'Think', signature: 'sig' },
        { text: 'opaque', redacted: true },
      ],
      toolCalls: [
        { toolCallId: 'a', toolName: 'f', arguments: '{"x":1}', streamedArguments: '{"x":1}', deltaCount: 2 },
        { toolCallId: 'b', toolName: 'g', arguments: '{}', streamedArguments: '{}', deltaCount: 1 },
      ],
      usage,
      stopReason: 'tool-use',
      rawStopReason: 'tool_calls',
      types: valid.map((part) => part.type),
    });
  });
});

describe('collectStream', () => {
  it('captures the parts before an error and the error itself', async () => {
    async function* failing(): AsyncGenerator<ModelStreamPart> {
      yield { type: 'text-delta', delta: 'a' };
      throw new Error('boom');
    }
    const seen: number[] = [];
    const { parts, error } = await collectStream(failing(), (_part, index) => seen.push(index));
    expect(parts).toEqual([{ type: 'text-delta', delta: 'a' }]);
    expect(error).toEqual(new Error('boom'));
    expect(seen).toEqual([0]);
  });
});

describe('provider-wire helpers', () => {
  it('frames server-sent events with and without an event name', () => {
    expect(formatServerSentEvent({ type: 'ping' }, 'ping')).toBe('event: ping\ndata: {"type":"ping"}\n\n');
    expect(formatServerSentEvent('[DONE]')).toBe('data: [DONE]\n\n');
  });

  it('defaults the stop reason to tool-use when the script calls a tool', () => {
    expect(scriptedStopReason({ type: 'stream', events: [{ type: 'text', text: 'x' }] })).toBe('end-turn');
    expect(
      scriptedStopReason({
        type: 'stream',
        events: [{ type: 'tool-call-start', toolCallId: 'a', toolName: 'f' }],
      }),
    ).toBe('tool-use');
    expect(scriptedStopReason({ type: 'stream', events: [], stopReason: 'max-tokens' })).toBe('max-tokens');
  });
});
