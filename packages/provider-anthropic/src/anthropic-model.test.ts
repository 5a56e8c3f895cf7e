import Anthropic from '@anthropic-ai/sdk';
import { type AssistantMessage, LunationError, type ModelRequest } from '@lunation/contract';
import {
  assertStreamInvariants,
  collectStream,
  summarizeParts,
  useScriptedServer,
} from '@lunation/provider-testkit';
import {
  blockDelta,
  blockStart,
  blockStop,
  errorBody,
  errorEvent,
  messageDelta,
  messageStart,
  messageStop,
  ping,
  streamHeaders,
} from '@lunation/provider-testkit/wires/anthropic-messages';
import { describe, expect, it } from 'vitest';
import { AnthropicModel, type AnthropicModelOptions } from './anthropic-model.js';
import { usesAdaptiveThinking } from './build-request.js';

const server = useScriptedServer();

function model(options: Partial<AnthropicModelOptions> = {}): AnthropicModel {
  return new AnthropicModel({
    model: 'claude-haiku-4-5',
    apiKey: 'sk-ant-test',
    baseURL: server.url,
    retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 4 },
    ...options,
  });
}

function sse(...events: string[]) {
  return { status: 200, headers: streamHeaders(), body: events };
}

function jsonError(status: number, body: unknown, headers: Record<string, string> = {}) {
  return {
    status,
    headers: { 'content-type': 'application/json', 'request-id': 'req_011CSHoEeqs5C35K2UUqR7Fy', ...headers },
    body: JSON.stringify(body),
  };
}

/** A complete text reply. */
function textReply(text: string, stopReason = 'end_turn') {
  return sse(
    messageStart(),
    blockStart(0, { type: 'text', text: '' }),
    ping,
    blockDelta(0, { type: 'text_delta', text }),
    blockStop(0),
    messageDelta(stopReason, { output_tokens: 3 }),
    messageStop,
  );
}

const weatherTool = {
  name: 'get_weather',
  description: 'The current weather in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const timeTool = {
  name: 'get_time',
  description: 'The time in a zone.',
  parameters: { type: 'object', properties: {} },
};

function userRequest(text = 'Hi', extra: Partial<ModelRequest> = {}): ModelRequest {
  return { messages: [{ id: 'u1', role: 'user', content: [{ type: 'text', text }] }], tools: [], ...extra };
}

async function run(
  request: ModelRequest,
  options: Partial<AnthropicModelOptions> = {},
  signal?: AbortSignal,
) {
  return collectStream(model(options).stream(request, { signal }));
}

describe('AnthropicModel request', () => {
  it('sends a top-level system prompt, content blocks, merged tool results, tools and thinking', async () => {
    server.enqueue(textReply('ok'));
    const request: ModelRequest = {
      messages: [
        { id: 's1', role: 'system', content: [{ type: 'text', text: 'You are terse.' }] },
        { id: 's2', role: 'system', content: [{ type: 'text', text: 'Answer in English.' }] },
        {
          id: 'u1',
          role: 'user',
          content: [
            { type: 'text', text: 'Weather where these were taken?' },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
            { type: 'image', source: { type: 'base64', mediaType: 'image/jpeg', data: '/9j/4AAQSkZJRg==' } },
          ],
        },
        {
          id: 'a1',
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'Paris and Oslo.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA' },
            { type: 'reasoning', text: 'EmwKAhgBEgy3va3pzix', redacted: true },
            { type: 'reasoning', text: 'unsigned reasoning from another provider' },
            { type: 'text', text: 'Checking both.' },
            {
              type: 'tool-call',
              toolCallId: 'toolu_1',
              toolName: 'get_weather',
              arguments: '{"city":"Paris"}',
            },
            { type: 'tool-call', toolCallId: 'toolu_2', toolName: 'get_weather', arguments: 'not json' },
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
              result: { status: 'error', message: 'unknown city' },
            },
          ],
        },
        { id: 'u2', role: 'user', content: [{ type: 'text', text: 'And now?' }] },
      ],
      tools: [weatherTool, timeTool],
      toolChoice: 'required',
      overrides: { temperature: 0.3, topP: 0.9, reasoningEffort: 'medium', stopSequences: ['###'] },
    };
    const { error } = await run(request, { headers: { 'anthropic-beta': 'test-beta-2025-01-01' } });
    expect(error).toBeUndefined();
    const sent = server.requests[0]!;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/v1/messages');
    expect(sent.headers).toMatchObject({
      authorization: 'Bearer sk-ant-test',
      'anthropic-version': expect.any(String),
      'anthropic-beta': 'test-beta-2025-01-01',
      'x-stainless-retry-count': '0',
    });
    expect(sent.body).toEqual({
      model: 'claude-haiku-4-5',
      max_tokens: 4_096 + 8_192,
      stream: true,
      system: [
        { type: 'text', text: 'You are terse.' },
        { type: 'text', text: 'Answer in English.' },
      ],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather where these were taken?' },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
            { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQSkZJRg==' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Paris and Oslo.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA' },
            { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' },
            { type: 'text', text: 'Checking both.' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '{"tempC":21}' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: 'unknown city', is_error: true },
            { type: 'text', text: 'And now?' },
          ],
        },
      ],
      tools: [
        { name: 'get_weather', description: weatherTool.description, input_schema: weatherTool.parameters },
        { name: 'get_time', description: timeTool.description, input_schema: timeTool.parameters },
      ],
      tool_choice: { type: 'auto' },
      stop_sequences: ['###'],
      thinking: { type: 'enabled', budget_tokens: 8_192 },
    });
  });

  it.each([
    ['auto', { type: 'auto' }],
    ['none', { type: 'none' }],
    [
      { type: 'tool', toolName: 'get_weather' },
      { type: 'tool', name: 'get_weather' },
    ],
  ] as const)('maps tool choice %j', async (toolChoice, expected) => {
    server.enqueue(textReply('ok'));
    await run(userRequest('Hi', { tools: [weatherTool], toolChoice }));
    expect((server.requests[0]!.body as Record<string, unknown>).tool_choice).toEqual(expected);
  });

  it('maps reasoning effort, maxTokens, overrides.model and extraBody', async () => {
    server.enqueue(textReply('a'), textReply('b'), textReply('c'));
    await run(
      userRequest('Hi', {
        overrides: { reasoningEffort: 'none', maxTokens: 1_000, model: 'claude-haiku-4-5' },
      }),
    );
    await run(
      userRequest('Hi', { overrides: { reasoningEffort: { budgetTokens: 500 }, maxTokens: 20_000 } }),
    );
    await run(
      userRequest('Hi', { providerOptions: { anthropic: { extraBody: { metadata: { user_id: 'u-42' } } } } }),
      { maxTokens: 2_048 },
    );
    const [first, second, third] = server.requests.map((request) => request.body as Record<string, unknown>);
    expect(first).toMatchObject({
      model: 'claude-haiku-4-5',
      max_tokens: 1_000,
      thinking: { type: 'disabled' },
    });
    expect(second).toMatchObject({ max_tokens: 20_000, thinking: { type: 'enabled', budget_tokens: 1_024 } });
    expect(third).toMatchObject({ max_tokens: 2_048, metadata: { user_id: 'u-42' } });
    expect(third).not.toHaveProperty('thinking');
    for (const body of [first, second, third]) {
      expect(body).not.toHaveProperty('temperature');
      expect(body).not.toHaveProperty('top_p');
    }
  });

  it('uses adaptive thinking with output_config.effort for Claude 4.6 and later', async () => {
    server.enqueue(textReply('a'), textReply('b'), textReply('c'));
    await run(userRequest('Hi', { overrides: { model: 'claude-sonnet-5-5', reasoningEffort: 'minimal' } }));
    await run(userRequest('Hi', { overrides: { reasoningEffort: { budgetTokens: 10_000 } } }), {
      thinking: 'adaptive',
    });
    await run(userRequest('Hi', { overrides: { model: 'claude-opus-4-6', reasoningEffort: 'none' } }));
    const [first, second, third] = server.requests.map((request) => request.body as Record<string, unknown>);
    expect(first).toMatchObject({
      max_tokens: 4_096,
      thinking: { type: 'adaptive' },
      output_config: { effort: 'low' },
    });
    expect(second).toMatchObject({ thinking: { type: 'adaptive' }, output_config: { effort: 'medium' } });
    expect(third).not.toHaveProperty('thinking');
    expect(third).not.toHaveProperty('output_config');
  });

  it.each([
    ['claude-sonnet-5-5', true],
    ['claude-sonnet-5', true],
    ['claude-opus-4-6', true],
    ['claude-mythos-preview', true],
    ['anthropic.claude-opus-4-6-v1', true],
    ['claude-haiku-4-5-20251001', false],
    ['claude-sonnet-4-5', false],
    ['claude-3-7-sonnet-20250219', false],
    ['my-finetune', false],
  ])('usesAdaptiveThinking(%s) is %s', (model, expected) => {
    expect(usesAdaptiveThinking(model)).toBe(expected);
  });

  it('puts cache breakpoints on the system prompt, the last tool and the last message when promptCache is on', async () => {
    server.enqueue(textReply('a'), textReply('b'));
    const request: ModelRequest = {
      messages: [
        { id: 's', role: 'system', content: [{ type: 'text', text: 'Long, stable instructions.' }] },
        { id: 'u1', role: 'user', content: [{ type: 'text', text: 'Hi' }] },
        {
          id: 'a1',
          role: 'assistant',
          content: [{ type: 'tool-call', toolCallId: 'toolu_1', toolName: 'get_time', arguments: '{}' }],
        },
        {
          id: 't1',
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'toolu_1',
              toolName: 'get_time',
              result: { status: 'success', data: '12:00' },
            },
          ],
        },
      ],
      tools: [weatherTool, timeTool],
    };
    await run(request, { promptCache: true });
    await run({ ...request, providerOptions: { anthropic: { promptCache: false } } }, { promptCache: true });
    const cached = server.requests[0]!.body as {
      system: Array<Record<string, unknown>>;
      tools: Array<Record<string, unknown>>;
      messages: Array<{ content: Array<Record<string, unknown>> }>;
    };
    expect(cached.system).toEqual([
      { type: 'text', text: 'Long, stable instructions.', cache_control: { type: 'ephemeral' } },
    ]);
    expect(cached.tools.map((tool) => tool.cache_control)).toEqual([undefined, { type: 'ephemeral' }]);
    expect(cached.messages.at(-1)!.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_1', content: '12:00', cache_control: { type: 'ephemeral' } },
    ]);
    expect(cached.messages[0]!.content[0]).not.toHaveProperty('cache_control');
    expect(server.requests[1]!.rawBody).not.toContain('cache_control');
  });

  it('uses an injected client, with the SDK retries off', async () => {
    server.enqueue(jsonError(529, errorBody(529), { 'x-should-retry': 'true' }));
    const client = new Anthropic({ apiKey: 'sk-ant-injected', baseURL: server.url, maxRetries: 5 });
    const { error } = await run(userRequest(), { client, apiKey: undefined, baseURL: undefined });
    expect(LunationError.hasCode(error, 'overloaded')).toBe(true);
    expect((error as Error).message).toMatch(/^Anthropic answered HTTP 529 \(overloaded_error\)/);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-ant-injected');
  });
});

describe('AnthropicModel stream', () => {
  it('streams text and ignores ping events', async () => {
    server.enqueue(
      sse(
        messageStart({ input_tokens: 12, output_tokens: 1 }),
        blockStart(0, { type: 'text', text: '' }),
        ping,
        blockDelta(0, { type: 'text_delta', text: 'Hello' }),
        ping,
        blockDelta(0, { type: 'text_delta', text: '!' }),
        blockStop(0),
        messageDelta('end_turn', { output_tokens: 6 }),
        messageStop,
      ),
    );
    const { parts, error } = await run(userRequest());
    expect(error).toBeUndefined();
    expect(parts).toEqual([
      { type: 'text-delta', delta: 'Hello' },
      { type: 'text-delta', delta: '!' },
      {
        type: 'usage',
        usage: {
          inputTokens: 12,
          outputTokens: 6,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          reasoningTokens: 0,
        },
      },
      { type: 'finish', stopReason: 'end-turn', rawStopReason: 'end_turn' },
    ]);
  });

  it('streams thinking with its signature and a tool call, and sends the signed thinking back on the next request', async () => {
    server.enqueue(
      sse(
        messageStart({ input_tokens: 50, output_tokens: 1 }),
        blockStart(0, { type: 'thinking', thinking: '', signature: '' }),
        ping,
        blockDelta(0, { type: 'thinking_delta', thinking: 'I need the ' }),
        blockDelta(0, { type: 'thinking_delta', thinking: 'weather in Paris.' }),
        blockDelta(0, { type: 'signature_delta', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA' }),
        blockStop(0),
        blockStart(1, { type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: {} }),
        blockDelta(1, { type: 'input_json_delta', partial_json: '' }),
        blockDelta(1, { type: 'input_json_delta', partial_json: '{"city": ' }),
        blockDelta(1, { type: 'input_json_delta', partial_json: '"Paris"}' }),
        blockStop(1),
        messageDelta('tool_use', { output_tokens: 80, output_tokens_details: { thinking_tokens: 30 } }),
        messageStop,
      ),
      textReply('It is 21°C in Paris.'),
    );
    const first = await run(
      userRequest('Weather in Paris?', { tools: [weatherTool], overrides: { reasoningEffort: 'low' } }),
    );
    expect(first.error).toBeUndefined();
    assertStreamInvariants(first.parts);
    expect(first.parts).toEqual([
      { type: 'reasoning-delta', delta: 'I need the ' },
      { type: 'reasoning-delta', delta: 'weather in Paris.' },
      { type: 'reasoning-delta', delta: '', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA' },
      { type: 'tool-call-start', toolCallId: 'toolu_01A', toolName: 'get_weather' },
      { type: 'tool-call-delta', toolCallId: 'toolu_01A', argumentsDelta: '{"city": ' },
      { type: 'tool-call-delta', toolCallId: 'toolu_01A', argumentsDelta: '"Paris"}' },
      {
        type: 'tool-call-end',
        toolCallId: 'toolu_01A',
        toolName: 'get_weather',
        arguments: '{"city": "Paris"}',
      },
      {
        type: 'usage',
        usage: {
          inputTokens: 50,
          outputTokens: 80,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          reasoningTokens: 30,
        },
      },
      { type: 'finish', stopReason: 'tool-use', rawStopReason: 'tool_use' },
    ]);

    const summary = summarizeParts(first.parts);
    const reasoning = summary.reasoning[0]!;
    const call = summary.toolCalls[0]!;
    const assistant: AssistantMessage = {
      id: 'a1',
      role: 'assistant',
      content: [
        { type: 'reasoning', text: reasoning.text, signature: reasoning.signature },
        {
          type: 'tool-call',
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          arguments: call.arguments!,
        },
      ],
    };
    const second = await run({
      messages: [
        { id: 'u1', role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
        assistant,
        {
          id: 't1',
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'toolu_01A',
              toolName: 'get_weather',
              result: { status: 'success', data: { tempC: 21 } },
            },
          ],
        },
      ],
      tools: [weatherTool],
      overrides: { reasoningEffort: 'low' },
    });
    expect(second.error).toBeUndefined();
    expect(summarizeParts(second.parts).text).toBe('It is 21°C in Paris.');
    expect((server.requests[1]!.body as { messages: unknown[] }).messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          {
            type: 'thinking',
            thinking: 'I need the weather in Paris.',
            signature: 'EqQBCgIYAhIM1gbcDa9GJwZA',
          },
          { type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: { city: 'Paris' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01A', content: '{"tempC":21}' }] },
    ]);
  });

  it('passes redacted thinking, a signature given at block start, and a tool call without input pieces', async () => {
    server.enqueue(
      sse(
        messageStart(),
        blockStart(0, { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4a' }),
        blockStop(0),
        blockStart(1, { type: 'thinking', thinking: '', signature: 'sig-omitted-display' }),
        blockStop(1),
        blockStart(2, { type: 'tool_use', id: 'toolu_02', name: 'get_time', input: {} }),
        blockStop(2),
        messageDelta('tool_use', { output_tokens: 9 }),
        messageStop,
      ),
    );
    const { parts, error } = await run(userRequest('Time?', { tools: [timeTool] }));
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    expect(parts.slice(0, 5)).toEqual([
      { type: 'reasoning-delta', delta: 'EmwKAhgBEgy3va3pzix/LafPsn4a', redacted: true },
      { type: 'reasoning-delta', delta: '', signature: 'sig-omitted-display' },
      { type: 'tool-call-start', toolCallId: 'toolu_02', toolName: 'get_time' },
      { type: 'tool-call-delta', toolCallId: 'toolu_02', argumentsDelta: '{}' },
      { type: 'tool-call-end', toolCallId: 'toolu_02', toolName: 'get_time', arguments: '{}' },
    ]);
  });

  it('counts cache reads and writes into inputTokens', async () => {
    server.enqueue(
      sse(
        messageStart({
          input_tokens: 100,
          cache_read_input_tokens: 1_000,
          cache_creation_input_tokens: 50,
          output_tokens: 1,
        }),
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'ok' }),
        blockStop(0),
        messageDelta('end_turn', {
          input_tokens: 100,
          cache_read_input_tokens: 1_000,
          cache_creation_input_tokens: 50,
          output_tokens: 40,
          output_tokens_details: { thinking_tokens: 12 },
        }),
        messageStop,
      ),
    );
    const { parts } = await run(userRequest());
    expect(summarizeParts(parts).usage).toEqual({
      inputTokens: 1_150,
      outputTokens: 40,
      cacheReadTokens: 1_000,
      cacheWriteTokens: 50,
      reasoningTokens: 12,
    });
  });

  it.each([
    ['end_turn', 'end-turn'],
    ['model_context_window_exceeded', 'max-tokens'],
    ['stop_sequence', 'stop-sequence'],
    ['max_tokens', 'max-tokens'],
  ])('maps stop_reason %s to %s', async (stopReason, expected) => {
    server.enqueue(textReply('x', stopReason));
    const { parts } = await run(userRequest());
    expect(parts.at(-1)).toEqual({ type: 'finish', stopReason: expected, rawStopReason: stopReason });
  });

  it('throws an error event that arrives after a part with its own code, without retrying', async () => {
    server.enqueue(
      sse(
        messageStart(),
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'Par' }),
        errorEvent('overloaded_error', 'Overloaded'),
      ),
      textReply('never served'),
    );
    const { parts, error } = await run(userRequest(), { retry: { maxRetries: 2, initialDelayMs: 1 } });
    expect(LunationError.hasCode(error, 'overloaded')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(true);
    expect((error as Error).message).toContain('error event inside the stream (overloaded_error)');
    expect(parts).toEqual([{ type: 'text-delta', delta: 'Par' }]);
    expect(server.requests).toHaveLength(1);
  });

  it('retries an error event that arrives before any part', async () => {
    server.enqueue(
      sse(messageStart(), ping, errorEvent('api_error', 'Internal server error')),
      textReply('recovered'),
    );
    const { parts, error } = await run(userRequest(), { retry: { maxRetries: 1, initialDelayMs: 1 } });
    expect(error).toBeUndefined();
    expect(summarizeParts(parts).text).toBe('recovered');
    expect(server.requests).toHaveLength(2);
  });

  it('throws "stream-interrupted" when the stream ends after message_delta but before message_stop', async () => {
    server.enqueue(
      sse(
        messageStart(),
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'Done' }),
        blockStop(0),
        messageDelta('end_turn', { output_tokens: 2 }),
      ),
    );
    const { parts, error } = await run(userRequest());
    expect(LunationError.hasCode(error, 'stream-interrupted')).toBe(true);
    expect((error as Error).message).toContain('before message_stop');
    expect(parts).toEqual([{ type: 'text-delta', delta: 'Done' }]);
  });

  it('aborting mid-stream closes the connection and throws "cancelled"', async () => {
    server.enqueue({
      ...sse(
        messageStart(),
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'Hel' }),
      ),
      ending: 'hang',
    });
    const controller = new AbortController();
    const { parts, error } = await collectStream(
      model().stream(userRequest(), { signal: controller.signal }),
      () => controller.abort(),
    );
    expect(LunationError.hasCode(error, 'cancelled')).toBe(true);
    expect(parts).toEqual([{ type: 'text-delta', delta: 'Hel' }]);
    expect(await server.requests[0]!.outcome).toBe('client-closed');
  });
});

describe('AnthropicModel errors', () => {
  it('maps "prompt is too long" to "context-overflow" with the request id', async () => {
    server.enqueue(jsonError(400, errorBody(400, undefined, true)));
    const { error } = await run(userRequest());
    expect(LunationError.hasCode(error, 'context-overflow')).toBe(true);
    const lunationError = error as LunationError;
    expect(lunationError.message).toContain('prompt is too long: 208656 tokens > 200000 maximum');
    expect(lunationError.details).toMatchObject({
      requestId: 'req_011CSHoEeqs5C35K2UUqR7Fy',
      type: 'invalid_request_error',
      model: 'claude-haiku-4-5',
    });
  });

  it('explains a bad key and reads Retry-After on a rate limit', async () => {
    server.enqueue(
      jsonError(401, errorBody(401), { 'x-should-retry': 'false' }),
      jsonError(429, errorBody(429), { 'retry-after': '12', 'x-should-retry': 'true' }),
    );
    const unauthorized = (await run(userRequest())).error;
    expect(LunationError.hasCode(unauthorized, 'unauthorized')).toBe(true);
    expect((unauthorized as Error).message).toContain('ANTHROPIC_API_KEY');
    const limited = (await run(userRequest())).error as LunationError;
    expect(limited.code).toBe('rate-limited');
    expect(limited.retryAfterMs).toBe(12_000);
    expect(limited.isRetryable).toBe(true);
  });

  it('retries 529 overloaded responses, then succeeds', async () => {
    server.enqueue(
      jsonError(529, errorBody(529), { 'x-should-retry': 'true' }),
      jsonError(529, errorBody(529), { 'x-should-retry': 'true' }),
      textReply('finally'),
    );
    const { parts, error } = await run(userRequest(), {
      maxRetries: 2,
      retry: { initialDelayMs: 1, maxDelayMs: 2 },
    });
    expect(error).toBeUndefined();
    expect(summarizeParts(parts).text).toBe('finally');
    expect(server.requests).toHaveLength(3);
    expect(server.requests.map((request) => request.headers['x-stainless-retry-count'])).toEqual([
      '0',
      '0',
      '0',
    ]);
  });

  it('reports a server slower than `timeout` as a retryable "timeout"', async () => {
    server.enqueue({ ...textReply('late'), headersDelayMs: 500 });
    const { error } = await run(userRequest(), { timeout: 50 });
    expect(LunationError.hasCode(error, 'timeout')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(true);
  });
});
