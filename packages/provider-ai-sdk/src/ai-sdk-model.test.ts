import {
  APICallError,
  InvalidPromptError,
  type LanguageModelV4CallOptions,
  type LanguageModelV4StreamPart,
  type LanguageModelV4Usage,
  LoadAPIKeyError,
} from '@ai-sdk/provider';
import { LunationError, type ModelRequest } from '@lunation/contract';
import { assertStreamInvariants, collectStream, summarizeParts } from '@lunation/provider-testkit';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { AiSdkModel, type AiSdkModelOptions } from './ai-sdk-model.js';

const usage: LanguageModelV4Usage = {
  inputTokens: { total: 120, noCache: 20, cacheRead: 80, cacheWrite: 20 },
  outputTokens: { total: 50, text: 20, reasoning: 30 },
};

function finish(unified = 'stop', raw: string | undefined = 'end_turn'): LanguageModelV4StreamPart {
  return { type: 'finish', usage, finishReason: { unified: unified as 'stop', raw } };
}

/** A mock model answering each call with the next list of parts. */
function mockModel(...answers: LanguageModelV4StreamPart[][]): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    provider: 'anthropic.messages',
    modelId: 'claude-sonnet-5-5',
    doStream: answers.map((parts) => ({ stream: convertArrayToReadableStream(parts) })),
  });
}

function bridge(model: MockLanguageModelV4, options: Partial<AiSdkModelOptions> = {}): AiSdkModel {
  return new AiSdkModel({ model, retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 2 }, ...options });
}

const hello: ModelRequest = {
  messages: [{ id: 'u1', role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
  tools: [],
};

describe('AiSdkModel request', () => {
  it('maps messages, tools, tool choice, overrides, responseFormat and providerOptions to V4 call options', async () => {
    const model = mockModel([finish()]);
    const schema = { type: 'object', properties: { city: { type: 'string' } } } as const;
    const request: ModelRequest = {
      messages: [
        {
          id: 's1',
          role: 'system',
          content: [
            { type: 'text', text: 'Be terse.' },
            { type: 'text', text: 'English.' },
          ],
        },
        {
          id: 'u1',
          role: 'user',
          content: [
            { type: 'text', text: 'Weather here?' },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
            { type: 'image', source: { type: 'base64', mediaType: 'image/jpeg', data: '/9j/4AAQ' } },
          ],
        },
        {
          id: 'a1',
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'Paris.', providerMetadata: { anthropic: { signature: 'sig-1' } } },
            { type: 'reasoning', text: 'native signature only', signature: 'sig-native' },
            { type: 'text', text: 'Checking.' },
            { type: 'refusal', text: 'not sent' },
            {
              type: 'provider-content',
              provider: 'anthropic',
              kind: 'tool-call',
              value: {
                toolCallId: 'srvtoolu_1',
                toolName: 'web_search',
                input: '{"query":"weather"}',
                providerExecuted: true,
              },
            },
            {
              type: 'provider-content',
              provider: 'anthropic',
              kind: 'tool-result',
              value: {
                toolCallId: 'srvtoolu_1',
                toolName: 'web_search',
                result: [{ url: 'https://w.example' }],
              },
            },
            {
              type: 'provider-content',
              provider: 'openai',
              kind: 'tool-call',
              value: { toolCallId: 'ws_1' },
            },
            {
              type: 'tool-call',
              toolCallId: 'toolu_1',
              toolName: 'get_weather',
              arguments: '{"city":"Paris"}',
              providerMetadata: { anthropic: { caller: { type: 'direct' } } },
            },
          ],
        },
        {
          id: 't1',
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'toolu_1',
              toolName: 'get_weather',
              result: { status: 'success', data: { tempC: 21 } },
            },
          ],
        },
        {
          id: 't2',
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'toolu_2',
              toolName: 'get_weather',
              result: { status: 'error', message: 'no city' },
            },
            {
              type: 'tool-result',
              toolCallId: 'toolu_3',
              toolName: 'get_weather',
              result: { status: 'success', data: 'sunny' },
            },
          ],
        },
      ],
      tools: [{ name: 'get_weather', description: 'Weather.', parameters: { type: 'object' } }],
      toolChoice: { type: 'tool', toolName: 'get_weather' },
      overrides: {
        maxTokens: 500,
        temperature: 0.2,
        topP: 0.9,
        stopSequences: ['###'],
        reasoningEffort: { budgetTokens: 3_000 },
      },
      responseFormat: { type: 'json', schema, name: 'weather', description: 'The weather.' },
      providerOptions: { anthropic: { sendReasoning: true } },
    };
    const { error } = await collectStream(
      bridge(model, { headers: { 'x-team': 'lunation' } }).stream(request),
    );
    expect(error).toBeUndefined();
    const call = model.doStreamCalls[0]!;
    expect(call.abortSignal).toBeInstanceOf(AbortSignal);
    expect({ ...call, abortSignal: undefined }).toEqual({
      abortSignal: undefined,
      headers: { 'x-team': 'lunation' },
      prompt: [
        { role: 'system', content: 'Be terse.\n\nEnglish.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather here?' },
            {
              type: 'file',
              mediaType: 'image',
              data: { type: 'url', url: new URL('https://example.com/cat.png') },
            },
            { type: 'file', mediaType: 'image/jpeg', data: { type: 'data', data: '/9j/4AAQ' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'Paris.', providerOptions: { anthropic: { signature: 'sig-1' } } },
            { type: 'reasoning', text: 'native signature only' },
            { type: 'text', text: 'Checking.' },
            {
              type: 'tool-call',
              toolCallId: 'srvtoolu_1',
              toolName: 'web_search',
              input: { query: 'weather' },
              providerExecuted: true,
            },
            {
              type: 'tool-result',
              toolCallId: 'srvtoolu_1',
              toolName: 'web_search',
              output: { type: 'json', value: [{ url: 'https://w.example' }] },
            },
            {
              type: 'tool-call',
              toolCallId: 'toolu_1',
              toolName: 'get_weather',
              input: { city: 'Paris' },
              providerOptions: { anthropic: { caller: { type: 'direct' } } },
            },
          ],
        },
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'toolu_1',
              toolName: 'get_weather',
              output: { type: 'json', value: { tempC: 21 } },
            },
          ],
        },
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'toolu_2',
              toolName: 'get_weather',
              output: { type: 'error-text', value: 'no city' },
            },
            {
              type: 'tool-result',
              toolCallId: 'toolu_3',
              toolName: 'get_weather',
              output: { type: 'text', value: 'sunny' },
            },
          ],
        },
      ],
      tools: [
        { type: 'function', name: 'get_weather', description: 'Weather.', inputSchema: { type: 'object' } },
      ],
      toolChoice: { type: 'tool', toolName: 'get_weather' },
      maxOutputTokens: 500,
      temperature: 0.2,
      topP: 0.9,
      stopSequences: ['###'],
      reasoning: 'low',
      responseFormat: { type: 'json', schema, name: 'weather', description: 'The weather.' },
      providerOptions: { anthropic: { sendReasoning: true } },
    } satisfies LanguageModelV4CallOptions);
  });

  it('sends the providerOptions option with every call, under the request providerOptions key by key', async () => {
    const model = mockModel([finish()], [finish()]);
    const withDefaults = bridge(model, {
      providerOptions: {
        openai: { strictJsonSchema: false, user: 'u1' },
        anthropic: { sendReasoning: false },
      },
    });
    await collectStream(withDefaults.stream(hello));
    await collectStream(
      withDefaults.stream({ ...hello, providerOptions: { openai: { user: 'u2' }, google: { safe: true } } }),
    );
    expect(model.doStreamCalls.map((call) => call.providerOptions)).toEqual([
      { openai: { strictJsonSchema: false, user: 'u1' }, anthropic: { sendReasoning: false } },
      {
        openai: { strictJsonSchema: false, user: 'u2' },
        anthropic: { sendReasoning: false },
        google: { safe: true },
      },
    ]);
  });

  it('uses resolveModel for overrides.model and refuses a switch without it', async () => {
    const other = mockModel([finish()]);
    const resolved: string[] = [];
    const withResolver = bridge(mockModel(), {
      resolveModel: (id) => {
        resolved.push(id);
        return other;
      },
    });
    const { error } = await collectStream(
      withResolver.stream({ ...hello, overrides: { model: 'claude-opus-5' } }),
    );
    expect(error).toBeUndefined();
    expect(resolved).toEqual(['claude-opus-5']);
    expect(other.doStreamCalls).toHaveLength(1);

    const { error: refused } = await collectStream(
      bridge(mockModel()).stream({ ...hello, overrides: { model: 'x' } }),
    );
    expect(LunationError.hasCode(refused, 'invalid-argument')).toBe(true);
    expect((refused as Error).message).toContain('resolveModel');
  });

  it('takes the provider id from the AI SDK provider name and refuses a model that is not V4', () => {
    expect(bridge(mockModel()).provider).toBe('anthropic');
    expect(bridge(mockModel(), { providerId: 'claude' }).provider).toBe('claude');
    expect(() => new AiSdkModel({ model: { specificationVersion: 'v3' } as never })).toThrow(
      /specification v4/,
    );
  });
});

describe('AiSdkModel stream', () => {
  it('closes each text and reasoning block with its gathered provider metadata (signatures, item ids)', async () => {
    const model = mockModel([
      { type: 'stream-start', warnings: [] },
      { type: 'response-metadata', id: 'resp_1', modelId: 'gpt-5' },
      { type: 'reasoning-start', id: 'rs_1:0', providerMetadata: { openai: { itemId: 'rs_1' } } },
      { type: 'reasoning-delta', id: 'rs_1:0', delta: 'Think ' },
      { type: 'reasoning-delta', id: 'rs_1:0', delta: 'first.' },
      {
        type: 'reasoning-end',
        id: 'rs_1:0',
        providerMetadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'gAAAA-enc' } },
      },
      { type: 'reasoning-start', id: '1' },
      { type: 'reasoning-delta', id: '1', delta: 'Signed.' },
      { type: 'reasoning-delta', id: '1', delta: '', providerMetadata: { anthropic: { signature: 'EqQB' } } },
      { type: 'reasoning-end', id: '1' },
      { type: 'text-start', id: 't1' },
      { type: 'text-delta', id: 't1', delta: 'Hello' },
      { type: 'text-end', id: 't1', providerMetadata: { openai: { itemId: 'msg_1' } } },
      { type: 'text-start', id: 't2' },
      { type: 'text-delta', id: 't2', delta: ' plain' },
      { type: 'text-end', id: 't2' },
      finish('stop', 'stop'),
    ]);
    const { parts, error } = await collectStream(bridge(model).stream(hello));
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    expect(parts.slice(0, 8)).toEqual([
      { type: 'reasoning-delta', delta: 'Think ' },
      { type: 'reasoning-delta', delta: 'first.' },
      {
        type: 'reasoning-delta',
        delta: '',
        providerMetadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'gAAAA-enc' } },
      },
      { type: 'reasoning-delta', delta: 'Signed.' },
      { type: 'reasoning-delta', delta: '', providerMetadata: { anthropic: { signature: 'EqQB' } } },
      { type: 'text-delta', delta: 'Hello' },
      { type: 'text-delta', delta: '', providerMetadata: { openai: { itemId: 'msg_1' } } },
      { type: 'text-delta', delta: ' plain' },
    ]);
  });

  it('streams client tool calls, with or without input pieces, and keeps provider-executed calls and results as provider content', async () => {
    const model = mockModel([
      { type: 'tool-input-start', id: 'srvtoolu_1', toolName: 'web_search', providerExecuted: true },
      { type: 'tool-input-delta', id: 'srvtoolu_1', delta: '{"query":"x"}' },
      { type: 'tool-input-end', id: 'srvtoolu_1' },
      {
        type: 'tool-call',
        toolCallId: 'srvtoolu_1',
        toolName: 'web_search',
        input: '{"query":"x"}',
        providerExecuted: true,
      },
      {
        type: 'tool-result',
        toolCallId: 'srvtoolu_1',
        toolName: 'web_search',
        result: [{ url: 'https://a.example', title: 'A' }],
        providerMetadata: { anthropic: { kind: 'web_search' } },
      },
      { type: 'source', sourceType: 'url', id: 'src_1', url: 'https://a.example', title: 'A' },
      { type: 'custom', kind: 'anthropic.message_start', providerMetadata: { anthropic: { id: 'msg_1' } } },
      {
        type: 'custom',
        kind: 'anthropic.fallback',
        providerMetadata: { anthropic: { from: { model: 'a' } } },
      },
      { type: 'tool-input-start', id: 'call_1', toolName: 'get_weather' },
      { type: 'tool-input-delta', id: 'call_1', delta: '{"city":' },
      { type: 'tool-input-delta', id: 'call_1', delta: '"Paris"}' },
      { type: 'tool-input-end', id: 'call_1' },
      { type: 'tool-call', toolCallId: 'call_1', toolName: 'get_weather', input: '{"city":"Paris"}' },
      {
        type: 'tool-call',
        toolCallId: 'call_2',
        toolName: 'get_time',
        input: '{}',
        providerMetadata: { openai: { itemId: 'fc_2' } },
      },
      finish('tool-calls', 'tool_use'),
    ]);
    const { parts, error } = await collectStream(bridge(model).stream(hello));
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    expect(parts.slice(0, 12)).toEqual([
      {
        type: 'provider-content',
        provider: 'anthropic',
        kind: 'tool-call',
        value: {
          toolCallId: 'srvtoolu_1',
          toolName: 'web_search',
          input: '{"query":"x"}',
          providerExecuted: true,
        },
      },
      {
        type: 'provider-content',
        provider: 'anthropic',
        kind: 'tool-result',
        value: {
          toolCallId: 'srvtoolu_1',
          toolName: 'web_search',
          result: [{ url: 'https://a.example', title: 'A' }],
          providerMetadata: { anthropic: { kind: 'web_search' } },
        },
      },
      {
        type: 'provider-content',
        provider: 'anthropic',
        kind: 'source',
        value: { type: 'source', sourceType: 'url', id: 'src_1', url: 'https://a.example', title: 'A' },
      },
      {
        type: 'provider-content',
        provider: 'anthropic',
        kind: 'custom',
        value: { kind: 'anthropic.fallback', providerMetadata: { anthropic: { from: { model: 'a' } } } },
      },
      { type: 'tool-call-start', toolCallId: 'call_1', toolName: 'get_weather' },
      { type: 'tool-call-delta', toolCallId: 'call_1', argumentsDelta: '{"city":' },
      { type: 'tool-call-delta', toolCallId: 'call_1', argumentsDelta: '"Paris"}' },
      { type: 'tool-call-end', toolCallId: 'call_1', toolName: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'tool-call-start', toolCallId: 'call_2', toolName: 'get_time' },
      { type: 'tool-call-delta', toolCallId: 'call_2', argumentsDelta: '{}' },
      {
        type: 'tool-call-end',
        toolCallId: 'call_2',
        toolName: 'get_time',
        arguments: '{}',
        providerMetadata: { openai: { itemId: 'fc_2' } },
      },
      {
        type: 'usage',
        usage: {
          inputTokens: 120,
          outputTokens: 50,
          cacheReadTokens: 80,
          cacheWriteTokens: 20,
          reasoningTokens: 30,
        },
      },
    ]);
    expect(summarizeParts(parts).stopReason).toBe('tool-use');
  });

  it('computes missing usage totals and keeps reasoning within output', async () => {
    const model = mockModel([
      {
        type: 'finish',
        usage: {
          inputTokens: { total: undefined, noCache: 10, cacheRead: 5, cacheWrite: undefined },
          outputTokens: { total: undefined, text: 7, reasoning: 3 },
        },
        finishReason: { unified: 'length', raw: 'max_tokens' },
      },
    ]);
    const { parts } = await collectStream(bridge(model).stream(hello));
    expect(parts).toEqual([
      {
        type: 'usage',
        usage: {
          inputTokens: 15,
          outputTokens: 10,
          cacheReadTokens: 5,
          cacheWriteTokens: 0,
          reasoningTokens: 3,
        },
      },
      { type: 'finish', stopReason: 'max-tokens', rawStopReason: 'max_tokens' },
    ]);
  });

  it.each([
    ['stop', 'stop_sequence', 'stop-sequence'],
    ['stop', 'end_turn', 'end-turn'],
    ['content-filter', 'refusal', 'content-filter'],
    ['tool-calls', 'tool_calls', 'tool-use'],
    ['error', 'error', 'error'],
    ['other', 'pause_turn', 'end-turn'],
  ])('maps finish reason %s (raw %s) to %s', async (unified, raw, expected) => {
    const { parts } = await collectStream(bridge(mockModel([finish(unified, raw)])).stream(hello));
    expect(parts.at(-1)).toMatchObject({ type: 'finish', stopReason: expected, rawStopReason: raw });
  });

  it('drops a call flushed right before an interrupted finish and throws "stream-interrupted"', async () => {
    const model = mockModel([
      { type: 'text-delta', id: '0', delta: 'Hel' },
      { type: 'tool-input-start', id: 'call_x', toolName: 'get_weather' },
      { type: 'tool-input-delta', id: 'call_x', delta: '{"ci' },
      { type: 'tool-call', toolCallId: 'call_x', toolName: 'get_weather', input: '{"ci' },
      { type: 'finish', usage, finishReason: { unified: 'interrupted', raw: undefined } },
    ]);
    const { parts, error } = await collectStream(bridge(model).stream(hello));
    expect(LunationError.hasCode(error, 'stream-interrupted')).toBe(true);
    expect(parts.map((part) => part.type)).toEqual(['text-delta', 'tool-call-start', 'tool-call-delta']);
  });

  it('throws "stream-interrupted" for a stream that ends without finish', async () => {
    const { parts, error } = await collectStream(
      bridge(mockModel([{ type: 'text-delta', id: '0', delta: 'Hi' }])).stream(hello),
    );
    expect(LunationError.hasCode(error, 'stream-interrupted')).toBe(true);
    expect((error as Error).message).toContain('without a finish part');
    expect(parts).toEqual([{ type: 'text-delta', delta: 'Hi' }]);
  });

  it('maps an error part by its vendor type and keeps the parts streamed before it', async () => {
    const model = mockModel([
      { type: 'text-delta', id: '0', delta: 'Par' },
      {
        type: 'error',
        error: { type: 'overloaded_error', message: 'Overloaded', statusCode: 529, isRetryable: true },
      },
    ]);
    const { parts, error } = await collectStream(bridge(model).stream(hello));
    expect(LunationError.hasCode(error, 'overloaded')).toBe(true);
    expect((error as Error).message).toContain('error inside the stream (overloaded_error)');
    expect(parts).toEqual([{ type: 'text-delta', delta: 'Par' }]);
  });
});

describe('AiSdkModel errors', () => {
  function failing(...errors: unknown[]): MockLanguageModelV4 {
    let call = 0;
    return new MockLanguageModelV4({
      provider: 'openai.responses',
      modelId: 'gpt-5',
      doStream: async () => {
        const error = errors[call++];
        if (error !== undefined) throw error;
        return {
          stream: convertArrayToReadableStream([{ type: 'text-delta', id: '0', delta: 'ok' }, finish()]),
        };
      },
    });
  }

  const apiError = (statusCode: number | undefined, headers: Record<string, string> = {}) =>
    new APICallError({
      message:
        statusCode === undefined ? 'Cannot connect to API: connect ECONNREFUSED' : 'Rate limit reached',
      url: 'https://api.openai.com/v1/responses',
      requestBodyValues: {},
      statusCode,
      responseHeaders: headers,
      responseBody: JSON.stringify({ error: { message: 'Rate limit reached for gpt-5', type: 'tokens' } }),
    });

  it('maps an HTTP 429 with Retry-After to a retryable "rate-limited" and retries it', async () => {
    const model = failing(apiError(429, { 'Retry-After': '1', 'x-request-id': 'req_9' }));
    const limited = await collectStream(bridge(model).stream(hello));
    const error = limited.error as LunationError;
    expect(error.code).toBe('rate-limited');
    expect(error.retryAfterMs).toBe(1_000);
    expect(error.status).toBe(429);
    expect(error.message).toContain('Rate limit reached for gpt-5');
    expect(error.details).toMatchObject({ requestId: 'req_9' });

    const retried = failing(apiError(429, { 'retry-after-ms': '1' }), apiError(503));
    const { parts, error: none } = await collectStream(
      bridge(retried, { retry: { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 2 } }).stream(hello),
    );
    expect(none).toBeUndefined();
    expect(summarizeParts(parts).text).toBe('ok');
    expect(retried.doStreamCalls).toHaveLength(3);
  });

  it('maps a refused connection to a retryable "provider-error", a missing key to "unauthorized" and a bad prompt to "invalid-request"', async () => {
    const unreachable = (await collectStream(bridge(failing(apiError(undefined))).stream(hello)))
      .error as LunationError;
    expect(unreachable.code).toBe('provider-error');
    expect(unreachable.isRetryable).toBe(true);

    const keyless = (
      await collectStream(
        bridge(failing(new LoadAPIKeyError({ message: 'OpenAI API key is missing.' }))).stream(hello),
      )
    ).error as LunationError;
    expect(keyless.code).toBe('unauthorized');

    const invalid = (
      await collectStream(
        bridge(failing(new InvalidPromptError({ prompt: [], message: 'bad prompt' }))).stream(hello),
      )
    ).error as LunationError;
    expect(invalid.code).toBe('invalid-request');
    expect(invalid.isRetryable).toBe(false);
    expect(invalid.message).toContain('AI_InvalidPromptError');
  });
});
