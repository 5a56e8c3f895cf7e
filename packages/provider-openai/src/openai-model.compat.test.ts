import { LunationError, type ModelRequest } from '@lunation/contract';
import { assertStreamInvariants, collectStream, useScriptedServer } from '@lunation/provider-testkit';
import { chunk, done, streamHeaders } from '@lunation/provider-testkit/wires/openai-chat';
import { describe, expect, it } from 'vitest';
import { OpenAIModel, type OpenAIModelOptions } from './openai-model.js';

const server = useScriptedServer();

function model(options: Partial<OpenAIModelOptions> = {}): OpenAIModel {
  return new OpenAIModel({
    model: 'gpt-4.1-mini',
    apiKey: 'sk-test',
    baseURL: `${server.url}/v1`,
    retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 4 },
    ...options,
  });
}

const sse = (...events: string[]) => ({ status: 200, headers: streamHeaders(), body: events });
const role = chunk({ role: 'assistant', content: '', refusal: null });
const usageEvent = (usage: Record<string, unknown>) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-usage',
    object: 'chat.completion.chunk',
    created: 1_754_000_000,
    model: 'some-model',
    choices: [],
    usage,
  })}\n\n`;

function userRequest(extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    messages: [{ id: 'u1', role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    tools: [],
    ...extra,
  };
}

const weatherTool = {
  name: 'get_weather',
  description: 'The current weather in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** A conversation in the middle of a tool loop, with reasoning on the tool-call turn and on an earlier answer. */
const toolLoopRequest: ModelRequest = {
  messages: [
    { id: 'u0', role: 'user', content: [{ type: 'text', text: 'Hello' }] },
    {
      id: 'a0',
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'A greeting.' },
        { type: 'text', text: 'Hi!' },
      ],
    },
    { id: 'u1', role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
    {
      id: 'a1',
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'I should call get_weather.' },
        { type: 'reasoning', text: 'opaque', redacted: true },
        { type: 'tool-call', toolCallId: 'call_1', toolName: 'get_weather', arguments: '{"city":"Paris"}' },
      ],
    },
    {
      id: 't1',
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'call_1',
          toolName: 'get_weather',
          result: { status: 'success', data: { tempC: 21 } },
        },
      ],
    },
  ],
  tools: [weatherTool],
};

describe('OpenAIModel stalls', () => {
  it('a stream that stalls before its first part fails with a retryable "timeout" and is retried', async () => {
    server.enqueue(
      { ...sse(role), ending: 'hang' },
      sse(role, chunk({ content: 'ok' }), chunk({}, 'stop'), done),
    );
    const { parts, error } = await collectStream(
      model({ streamIdleTimeoutMs: 150, retry: { maxRetries: 1, initialDelayMs: 1 } }).stream(userRequest()),
    );
    expect(error).toBeUndefined();
    expect(parts.map((part) => part.type)).toEqual(['text-delta', 'usage', 'finish']);
    expect(server.requests).toHaveLength(2);
    expect(await server.requests[0]!.outcome).toBe('client-closed');
  });

  it('without retries left, the stall before the first part is thrown as a retryable "timeout"', async () => {
    server.enqueue({ ...sse(role), ending: 'hang' });
    const { parts, error } = await collectStream(model({ streamIdleTimeoutMs: 150 }).stream(userRequest()));
    expect(LunationError.hasCode(error, 'timeout')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(true);
    expect(parts).toEqual([]);
    expect(await server.requests[0]!.outcome).toBe('client-closed');
  });

  it('a stream that sends one text part and then nothing fails with "stream-interrupted", keeping the part', async () => {
    server.enqueue(
      { ...sse(role, chunk({ content: 'Hel' })), ending: 'hang' },
      sse(role, chunk({}, 'stop'), done),
    );
    const { parts, error } = await collectStream(
      model({ streamIdleTimeoutMs: 150, retry: { maxRetries: 2, initialDelayMs: 1 } }).stream(userRequest()),
    );
    expect(LunationError.hasCode(error, 'stream-interrupted')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(false);
    expect((error as Error).message).toContain('150 ms');
    expect(parts).toEqual([{ type: 'text-delta', delta: 'Hel' }]);
    expect(server.requests).toHaveLength(1);
    expect(await server.requests[0]!.outcome).toBe('client-closed');
  });
});

describe('OpenAIModel usage across vendors', () => {
  async function usageOf(usage: Record<string, unknown>) {
    server.enqueue(sse(role, chunk({ content: 'x' }), chunk({}, 'stop'), usageEvent(usage), done));
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expect(error).toBeUndefined();
    return parts.find((part) => part.type === 'usage')?.usage;
  }

  it('keeps OpenAI usage as it is: reasoning already inside completion_tokens', async () => {
    expect(
      await usageOf({
        prompt_tokens: 100,
        completion_tokens: 70,
        total_tokens: 170,
        prompt_tokens_details: { cached_tokens: 64 },
        completion_tokens_details: { reasoning_tokens: 50 },
      }),
    ).toEqual({
      inputTokens: 100,
      outputTokens: 70,
      cacheReadTokens: 64,
      cacheWriteTokens: 0,
      reasoningTokens: 50,
    });
  });

  it('adds reasoning to the output when the total shows it was counted outside completion_tokens (xAI)', async () => {
    expect(
      await usageOf({
        prompt_tokens: 100,
        completion_tokens: 20,
        total_tokens: 170,
        prompt_tokens_details: { text_tokens: 100, cached_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 50 },
      }),
    ).toEqual({
      inputTokens: 100,
      outputTokens: 70,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 50,
    });
  });

  it('adds reasoning to the output when it exceeds completion_tokens and there is no total', async () => {
    expect(
      await usageOf({
        prompt_tokens: 10,
        completion_tokens: 5,
        completion_tokens_details: { reasoning_tokens: 40 },
      }),
    ).toMatchObject({ outputTokens: 45, reasoningTokens: 40 });
  });

  it("reads DeepSeek's prompt_cache_hit_tokens and Moonshot's top-level cached_tokens as cache reads", async () => {
    expect(
      await usageOf({
        prompt_tokens: 300,
        completion_tokens: 12,
        total_tokens: 312,
        prompt_cache_hit_tokens: 256,
        prompt_cache_miss_tokens: 44,
      }),
    ).toEqual({
      inputTokens: 300,
      outputTokens: 12,
      cacheReadTokens: 256,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    });
    expect(
      await usageOf({ prompt_tokens: 90, completion_tokens: 3, total_tokens: 93, cached_tokens: 64 }),
    ).toMatchObject({
      inputTokens: 90,
      cacheReadTokens: 64,
    });
  });

  it('counts cache reads into the input when the server left them out of prompt_tokens', async () => {
    expect(
      await usageOf({
        prompt_tokens: 20,
        completion_tokens: 3,
        prompt_tokens_details: { cached_tokens: 1_000 },
      }),
    ).toMatchObject({ inputTokens: 1_020, cacheReadTokens: 1_000 });
  });
});

describe('OpenAIModel reasoning history', () => {
  type SentMessage = { role: string; content?: unknown; reasoning_content?: string };
  async function sentMessages(options: Partial<OpenAIModelOptions>): Promise<SentMessage[]> {
    server.enqueue(sse(role, chunk({ content: 'ok' }), chunk({}, 'stop'), done));
    const { error } = await collectStream(model(options).stream(toolLoopRequest));
    expect(error).toBeUndefined();
    return (server.requests.at(-1)!.body as { messages: SentMessage[] }).messages;
  }

  it('sends no reasoning back by default', async () => {
    const messages = await sentMessages({});
    expect(messages.filter((message) => 'reasoning_content' in message)).toEqual([]);
  });

  it("'tool-call-turns' sends the reasoning of the tool-call turn as reasoning_content, without redacted blocks", async () => {
    const messages = await sentMessages({ reasoningHistory: 'tool-call-turns' });
    expect(messages[1]).toEqual({ role: 'assistant', content: 'Hi!' });
    expect(messages[3]).toEqual({
      role: 'assistant',
      content: null,
      reasoning_content: 'I should call get_weather.',
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      ],
    });
  });

  it("'all' sends the reasoning of every assistant turn", async () => {
    const messages = await sentMessages({ reasoningHistory: 'all' });
    expect(messages.map((message) => message.reasoning_content)).toEqual([
      undefined,
      'A greeting.',
      undefined,
      'I should call get_weather.',
      undefined,
    ]);
  });

  it('turns it on by default for DeepSeek, whose thinking mode needs it in tool loops', async () => {
    const deepseek = new OpenAIModel({
      model: 'deepseek-reasoner',
      apiKey: 'sk-test',
      baseURL: 'https://api.deepseek.com',
      maxRetries: 0,
    });
    // The request goes to the scripted server through an injected fetch; the option default comes from baseURL.
    const original = globalThis.fetch;
    globalThis.fetch = (input, init) =>
      original(
        String(input instanceof Request ? input.url : input).replace('https://api.deepseek.com', server.url),
        init,
      );
    try {
      server.enqueue(sse(role, chunk({ content: 'ok' }), chunk({}, 'stop'), done));
      const { error } = await collectStream(deepseek.stream(toolLoopRequest));
      expect(error).toBeUndefined();
    } finally {
      globalThis.fetch = original;
    }
    const messages = (server.requests[0]!.body as { messages: SentMessage[] }).messages;
    expect(server.requests[0]!.path).toBe('/chat/completions');
    expect(messages[3]!.reasoning_content).toBe('I should call get_weather.');
    expect(messages[1]!.reasoning_content).toBeUndefined();
  });
});

describe('OpenAIModel refusals', () => {
  it('streams a refusal as refusal-delta parts with stop reason "refusal", apart from text', async () => {
    server.enqueue(
      sse(
        role,
        chunk({ refusal: "I'm sorry, " }),
        chunk({ refusal: 'I cannot help with that.' }),
        chunk({}, 'stop'),
        done,
      ),
    );
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    expect(parts).toEqual([
      { type: 'refusal-delta', delta: "I'm sorry, " },
      { type: 'refusal-delta', delta: 'I cannot help with that.' },
      {
        type: 'usage',
        usage: {
          inputTokens: 0,
          outputTokens: 0,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          reasoningTokens: 0,
        },
        unknown: true,
      },
      { type: 'finish', stopReason: 'refusal', rawStopReason: 'stop' },
    ]);
  });

  it('sends a refusal back as `refusal` on the assistant message', async () => {
    server.enqueue(sse(role, chunk({ content: 'ok' }), chunk({}, 'stop'), done));
    const request: ModelRequest = {
      messages: [
        { id: 'u1', role: 'user', content: [{ type: 'text', text: 'Do the bad thing' }] },
        { id: 'a1', role: 'assistant', content: [{ type: 'refusal', text: 'I cannot help with that.' }] },
        { id: 'u2', role: 'user', content: [{ type: 'text', text: 'Then say hi' }] },
      ],
      tools: [],
    };
    const { error } = await collectStream(model().stream(request));
    expect(error).toBeUndefined();
    expect((server.requests[0]!.body as { messages: unknown[] }).messages).toEqual([
      { role: 'user', content: 'Do the bad thing' },
      { role: 'assistant', content: null, refusal: 'I cannot help with that.' },
      { role: 'user', content: 'Then say hi' },
    ]);
  });
});

describe('OpenAIModel request body', () => {
  it('deep-merges extraBody: nested objects keep what the adapter set', async () => {
    server.enqueue(sse(role, chunk({}, 'stop'), done));
    const schema = {
      type: 'object',
      properties: { answer: { type: 'string' } },
      required: ['answer'],
      additionalProperties: false,
    };
    const { error } = await collectStream(
      model().stream(
        userRequest({
          overrides: { reasoningEffort: 'high' },
          responseFormat: { type: 'json', schema },
          providerOptions: {
            openai: {
              extraBody: {
                stream_options: { include_obfuscation: false },
                response_format: { json_schema: { description: 'One answer.' } },
                reasoning_effort: 'low',
                metadata: { team: 'lunation' },
              },
            },
          },
        }),
      ),
    );
    expect(error).toBeUndefined();
    const body = server.requests[0]!.body as Record<string, unknown>;
    expect(body.stream_options).toEqual({ include_usage: true, include_obfuscation: false });
    expect(body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'output', schema, strict: true, description: 'One answer.' },
    });
    expect(body.reasoning_effort).toBe('low');
    expect(body.metadata).toEqual({ team: 'lunation' });
  });

  it('rejects n > 1 with a typed error before sending anything', async () => {
    const { error } = await collectStream(
      model().stream(userRequest({ providerOptions: { openai: { extraBody: { n: 3 } } } })),
    );
    expect(LunationError.hasCode(error, 'invalid-argument')).toBe(true);
    expect((error as Error).message).toContain('n=3');
    expect((error as Error).message).toContain('remove `n`');
    expect(server.requests).toHaveLength(0);
  });

  it('accepts n: 1', async () => {
    server.enqueue(sse(role, chunk({}, 'stop'), done));
    const { error } = await collectStream(
      model().stream(userRequest({ providerOptions: { openai: { extraBody: { n: 1 } } } })),
    );
    expect(error).toBeUndefined();
    expect((server.requests[0]!.body as { n: number }).n).toBe(1);
  });

  it('maps responseFormat to response_format json_schema, strict only when the schema allows it', async () => {
    const loose = {
      type: 'object',
      properties: { city: { type: 'string' }, note: { type: 'string' } },
      required: ['city'],
    };
    server.enqueue(
      sse(role, chunk({}, 'stop'), done),
      sse(role, chunk({}, 'stop'), done),
      sse(role, chunk({}, 'stop'), done),
    );
    await collectStream(
      model().stream(
        userRequest({
          responseFormat: { type: 'json', schema: loose, name: 'city_answer', description: 'A city.' },
        }),
      ),
    );
    await collectStream(
      model({ strictSchemas: false }).stream(
        userRequest({ responseFormat: { type: 'json', schema: loose } }),
      ),
    );
    await collectStream(
      model({ strictSchemas: true }).stream(userRequest({ responseFormat: { type: 'json', schema: loose } })),
    );
    const formats = server.requests.map(
      (request) => (request.body as { response_format: unknown }).response_format,
    );
    expect(formats).toEqual([
      {
        type: 'json_schema',
        json_schema: { name: 'city_answer', description: 'A city.', schema: loose, strict: false },
      },
      { type: 'json_schema', json_schema: { name: 'output', schema: loose, strict: false } },
      { type: 'json_schema', json_schema: { name: 'output', schema: loose, strict: true } },
    ]);
  });
});
