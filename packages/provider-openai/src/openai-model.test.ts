import { LunationError, type ModelRequest } from '@lunation/contract';
import {
  assertStreamInvariants,
  collectStream,
  summarizeParts,
  useScriptedServer,
} from '@lunation/provider-testkit';
import {
  chunk,
  done,
  errorBody,
  streamHeaders,
  usageChunk,
} from '@lunation/provider-testkit/wires/openai-chat';
import OpenAI from 'openai';
import { describe, expect, it, vi } from 'vitest';
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

function sse(...events: string[]) {
  return { status: 200, headers: streamHeaders(), body: events };
}

const role = chunk({ role: 'assistant', content: '', refusal: null });
const usage = {
  inputTokens: 10,
  outputTokens: 4,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};

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

async function run(request: ModelRequest, options: Partial<OpenAIModelOptions> = {}, signal?: AbortSignal) {
  return collectStream(model(options).stream(request, { signal }));
}

describe('OpenAIModel request', () => {
  it('sends the conversation, tools and overrides as a Chat Completions streaming body', async () => {
    server.enqueue(sse(role, chunk({}, 'stop'), usageChunk(usage), done));
    const request: ModelRequest = {
      messages: [
        { id: 's', role: 'system', content: [{ type: 'text', text: 'You are terse.' }] },
        {
          id: 'u1',
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these images?' },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
            { type: 'image', source: { type: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } },
          ],
        },
        {
          id: 'a1',
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'Two images; check the weather too.', signature: 'sig' },
            { type: 'text', text: 'Let me check.' },
            {
              type: 'tool-call',
              toolCallId: 'call_1',
              toolName: 'get_weather',
              arguments: '{"city":"Paris"}',
            },
            { type: 'tool-call', toolCallId: 'call_2', toolName: 'get_time', arguments: '{}' },
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
              result: { status: 'success', data: { tempC: 21 }, metadata: { cached: true } },
            },
            {
              type: 'tool-result',
              toolCallId: 'call_2',
              toolName: 'get_time',
              result: { status: 'error', message: 'clock unavailable' },
            },
          ],
        },
        { id: 'a2', role: 'assistant', content: [{ type: 'reasoning', text: 'only thinking' }] },
        { id: 'u2', role: 'user', content: [{ type: 'text', text: 'Thanks' }] },
      ],
      tools: [weatherTool, timeTool],
      toolChoice: 'required',
      overrides: {
        temperature: 0.2,
        topP: 0.9,
        maxTokens: 512,
        reasoningEffort: 'low',
        stopSequences: ['END'],
      },
    };
    const { error } = await run(request, {
      organization: 'org-test',
      project: 'proj-test',
      headers: { 'x-team': 'lunation' },
    });
    expect(error).toBeUndefined();
    expect(server.requests).toHaveLength(1);
    const sent = server.requests[0]!;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.headers).toMatchObject({
      authorization: 'Bearer sk-test',
      'content-type': 'application/json',
      'openai-organization': 'org-test',
      'openai-project': 'proj-test',
      'x-team': 'lunation',
      'x-stainless-retry-count': '0',
    });
    expect(sent.body).toEqual({
      model: 'gpt-4.1-mini',
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: 'system', content: 'You are terse.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these images?' },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Let me check.',
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
            { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"tempC":21}' },
        { role: 'tool', tool_call_id: 'call_2', content: 'clock unavailable' },
        { role: 'user', content: 'Thanks' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: weatherTool.description,
            parameters: weatherTool.parameters,
          },
        },
        {
          type: 'function',
          function: { name: 'get_time', description: timeTool.description, parameters: timeTool.parameters },
        },
      ],
      tool_choice: 'required',
      temperature: 0.2,
      top_p: 0.9,
      max_completion_tokens: 512,
      reasoning_effort: 'low',
      stop: ['END'],
    });
  });

  it('maps a named tool choice, overrides.model, max_tokens, a token budget and extraBody', async () => {
    server.enqueue(sse(role, chunk({}, 'stop'), done));
    const { error } = await run(
      userRequest('Hi', {
        tools: [weatherTool],
        toolChoice: { type: 'tool', toolName: 'get_weather' },
        overrides: { model: 'o4-mini', maxTokens: 100, reasoningEffort: { budgetTokens: 8_000 } },
        providerOptions: { openai: { extraBody: { parallel_tool_calls: false, user: 'u-42' } } },
      }),
      { maxTokensField: 'max_tokens' },
    );
    expect(error).toBeUndefined();
    const body = server.requests[0]!.body as Record<string, unknown>;
    expect(body.model).toBe('o4-mini');
    expect(body.tool_choice).toEqual({ type: 'function', function: { name: 'get_weather' } });
    expect(body.max_tokens).toBe(100);
    expect(body).not.toHaveProperty('max_completion_tokens');
    expect(body.reasoning_effort).toBe('medium');
    expect(body.parallel_tool_calls).toBe(false);
    expect(body.user).toBe('u-42');
  });

  it('leaves tools and tool_choice out when there are no tools', async () => {
    server.enqueue(sse(role, chunk({}, 'stop'), done));
    await run(userRequest('Hi', { toolChoice: 'auto' }));
    const body = server.requests[0]!.body as Record<string, unknown>;
    expect(body).not.toHaveProperty('tools');
    expect(body).not.toHaveProperty('tool_choice');
    expect(body.messages).toEqual([{ role: 'user', content: 'Hi' }]);
  });

  it('rejects an extraBody that is not an object before sending anything', async () => {
    const { error } = await run(userRequest('Hi', { providerOptions: { openai: { extraBody: 'nope' } } }));
    expect(LunationError.hasCode(error, 'invalid-argument')).toBe(true);
    expect(server.requests).toHaveLength(0);
  });

  it('uses an injected client, with the SDK retries off', async () => {
    server.enqueue({
      status: 503,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(errorBody(503)),
    });
    const client = new OpenAI({ apiKey: 'sk-injected', baseURL: `${server.url}/v1`, maxRetries: 5 });
    const { error } = await run(userRequest(), { client, apiKey: undefined, baseURL: undefined });
    expect(LunationError.hasCode(error, 'overloaded')).toBe(true);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-injected');
  });

  it('reports a missing API key as "unauthorized" without a request', async () => {
    vi.stubEnv('OPENAI_API_KEY', '');
    try {
      const { error } = await run(userRequest(), { apiKey: undefined });
      expect(LunationError.hasCode(error, 'unauthorized')).toBe(true);
      expect((error as Error).message).toContain('OPENAI_API_KEY');
      expect(server.requests).toHaveLength(0);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('OpenAIModel stream', () => {
  it('streams text, then usage with cached and reasoning tokens, then finish', async () => {
    const wireUsage = {
      inputTokens: 1_200,
      outputTokens: 90,
      cacheReadTokens: 1_024,
      cacheWriteTokens: 0,
      reasoningTokens: 64,
    };
    server.enqueue(
      sse(
        role,
        chunk({ content: 'Hello' }),
        chunk({ content: ' there' }),
        chunk({}, 'stop'),
        usageChunk(wireUsage),
        done,
      ),
    );
    const { parts, error } = await run(userRequest());
    expect(error).toBeUndefined();
    expect(parts).toEqual([
      { type: 'text-delta', delta: 'Hello' },
      { type: 'text-delta', delta: ' there' },
      { type: 'usage', usage: wireUsage },
      { type: 'finish', stopReason: 'end-turn', rawStopReason: 'stop' },
    ]);
  });

  it('streams reasoning from `reasoning_content` and `reasoning` delta fields', async () => {
    server.enqueue(
      sse(
        role,
        chunk({ content: null, reasoning_content: 'Think ' }),
        chunk({ content: null, reasoning: 'more.' }),
        chunk({ content: 'Answer' }),
        chunk({}, 'stop'),
        done,
      ),
    );
    const { parts, error } = await run(userRequest());
    expect(error).toBeUndefined();
    expect(parts.slice(0, 3)).toEqual([
      { type: 'reasoning-delta', delta: 'Think ' },
      { type: 'reasoning-delta', delta: 'more.' },
      { type: 'text-delta', delta: 'Answer' },
    ]);
  });

  it('keeps parallel calls apart by index when their argument pieces interleave', async () => {
    server.enqueue(
      sse(
        role,
        chunk({
          tool_calls: [
            { index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } },
          ],
        }),
        chunk({
          tool_calls: [
            { index: 1, id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{"zo' } },
          ],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: 'ne":"CET"}' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }),
        chunk({}, 'tool_calls'),
        usageChunk(usage),
        done,
      ),
    );
    const { parts, error } = await run(userRequest('Go', { tools: [weatherTool, timeTool] }));
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    expect(parts).toEqual([
      { type: 'tool-call-start', toolCallId: 'call_a', toolName: 'get_weather' },
      { type: 'tool-call-start', toolCallId: 'call_b', toolName: 'get_time' },
      { type: 'tool-call-delta', toolCallId: 'call_b', argumentsDelta: '{"zo' },
      { type: 'tool-call-delta', toolCallId: 'call_a', argumentsDelta: '{"city":' },
      { type: 'tool-call-delta', toolCallId: 'call_b', argumentsDelta: 'ne":"CET"}' },
      { type: 'tool-call-delta', toolCallId: 'call_a', argumentsDelta: '"Oslo"}' },
      { type: 'tool-call-end', toolCallId: 'call_a', toolName: 'get_weather', arguments: '{"city":"Oslo"}' },
      { type: 'tool-call-end', toolCallId: 'call_b', toolName: 'get_time', arguments: '{"zone":"CET"}' },
      { type: 'usage', usage },
      { type: 'finish', stopReason: 'tool-use', rawStopReason: 'tool_calls' },
    ]);
  });

  it('accepts a whole call in one chunk, empty arguments and `stop` after tool calls (OpenAI-compatible servers)', async () => {
    server.enqueue(
      sse(
        role,
        chunk({
          tool_calls: [
            {
              index: 0,
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Rome"}' },
            },
          ],
        }),
        chunk({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'get_time' } }] }),
        chunk({}, 'stop'),
        done,
      ),
    );
    const { parts, error } = await run(userRequest('Go', { tools: [weatherTool, timeTool] }));
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    const summary = summarizeParts(parts);
    expect(summary.toolCalls.map((call) => [call.toolCallId, call.arguments])).toEqual([
      ['call_1', '{"city":"Rome"}'],
      ['call_2', '{}'],
    ]);
    expect(summary.stopReason).toBe('tool-use');
    expect(summary.rawStopReason).toBe('stop');
    expect(summary.usage).toEqual({
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    });
  });

  it.each([
    ['length', 'max-tokens'],
    ['content_filter', 'content-filter'],
    ['function_call', 'tool-use'],
  ])('maps finish_reason %s to %s', async (finishReason, stopReason) => {
    server.enqueue(sse(role, chunk({ content: 'x' }), chunk({}, finishReason), done));
    const { parts } = await run(userRequest());
    expect(parts.at(-1)).toEqual({ type: 'finish', stopReason, rawStopReason: finishReason });
  });

  it('completes when the server closes after finish_reason without the usage chunk or [DONE]', async () => {
    server.enqueue(sse(role, chunk({ content: 'ok' }), chunk({}, 'stop')));
    const { parts, error } = await run(userRequest());
    expect(error).toBeUndefined();
    expect(summarizeParts(parts).stopReason).toBe('end-turn');
  });

  it('throws "stream-interrupted" when the connection drops mid-way, without retrying', async () => {
    server.enqueue(
      { ...sse(role, chunk({ content: 'Hel' })), ending: 'reset' },
      sse(role, chunk({}, 'stop'), done),
    );
    const { parts, error } = await run(userRequest(), { retry: { maxRetries: 2, initialDelayMs: 1 } });
    expect(LunationError.hasCode(error, 'stream-interrupted')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(true);
    expect((error as Error).message).toMatch(/cut off/);
    expect(parts).toEqual([{ type: 'text-delta', delta: 'Hel' }]);
    expect(server.requests).toHaveLength(1);
  });

  it('aborting mid-stream closes the connection and throws "cancelled"', async () => {
    server.enqueue({ ...sse(role, chunk({ content: 'Hel' })), ending: 'hang' });
    const controller = new AbortController();
    const { parts, error } = await collectStream(
      model().stream(userRequest(), { signal: controller.signal }),
      () => controller.abort(new Error('user left')),
    );
    expect(LunationError.hasCode(error, 'cancelled')).toBe(true);
    expect((error as Error).cause).toEqual(new Error('user left'));
    expect(parts).toHaveLength(1);
    expect(await server.requests[0]!.outcome).toBe('client-closed');
  });
});

describe('OpenAIModel errors', () => {
  function jsonError(status: number, body: unknown, headers: Record<string, string> = {}) {
    return {
      status,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'x-request-id': 'req_abc123',
        ...headers,
      },
      body: JSON.stringify(body),
    };
  }

  it('explains a rate limit with the API message, the request id and Retry-After', async () => {
    server.enqueue(jsonError(429, errorBody(429), { 'retry-after': '4' }));
    const { error } = await run(userRequest());
    expect(LunationError.hasCode(error, 'rate-limited')).toBe(true);
    const lunationError = error as LunationError;
    expect(lunationError.retryAfterMs).toBe(4_000);
    expect(lunationError.status).toBe(429);
    expect(lunationError.message).toContain('OpenAI-compatible server');
    expect(lunationError.message).toContain('HTTP 429 (rate_limit_exceeded)');
    expect(lunationError.message).toContain('Rate limit reached for gpt-4.1-mini');
    expect(lunationError.message).toContain('Wait and retry');
    expect(lunationError.details).toMatchObject({
      requestId: 'req_abc123',
      type: 'tokens',
      code: 'rate_limit_exceeded',
      model: 'gpt-4.1-mini',
    });
  });

  it('maps context_length_exceeded to "context-overflow"', async () => {
    server.enqueue(jsonError(400, errorBody(400, undefined, true)));
    const { error } = await run(userRequest());
    expect(LunationError.hasCode(error, 'context-overflow')).toBe(true);
    expect((error as Error).message).toContain('Shorten the conversation');
  });

  it('maps an unknown model to "model-not-found" and a bad key to "unauthorized"', async () => {
    server.enqueue(jsonError(404, errorBody(404)), jsonError(401, errorBody(401)));
    expect(LunationError.hasCode((await run(userRequest())).error, 'model-not-found')).toBe(true);
    const unauthorized = (await run(userRequest())).error;
    expect(LunationError.hasCode(unauthorized, 'unauthorized')).toBe(true);
    expect((unauthorized as Error).message).toContain('OPENAI_API_KEY');
  });

  it('obeys x-should-retry: false', async () => {
    server.enqueue(
      jsonError(503, errorBody(503), { 'x-should-retry': 'false' }),
      sse(role, chunk({}, 'stop'), done),
    );
    const { error } = await run(userRequest(), { retry: { maxRetries: 2, initialDelayMs: 1 } });
    expect(LunationError.hasCode(error, 'overloaded')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(false);
    expect(server.requests).toHaveLength(1);
  });

  it('retries an error sent inside the stream before any part, then succeeds', async () => {
    server.enqueue(
      sse(
        role,
        `data: ${JSON.stringify({ error: { message: 'The server had an error', type: 'server_error', param: null, code: null } })}\n\n`,
      ),
      sse(role, chunk({ content: 'fine' }), chunk({}, 'stop'), done),
    );
    const { parts, error } = await run(userRequest(), { retry: { maxRetries: 1, initialDelayMs: 1 } });
    expect(error).toBeUndefined();
    expect(summarizeParts(parts).text).toBe('fine');
    expect(server.requests).toHaveLength(2);
  });

  it('throws an error sent inside the stream after a part, mapped by its code, without retrying', async () => {
    server.enqueue(
      sse(
        role,
        chunk({ content: 'Hal' }),
        `data: ${JSON.stringify({ error: { message: 'Rate limit reached', type: 'tokens', param: null, code: 'rate_limit_exceeded' } })}\n\n`,
      ),
    );
    const { parts, error } = await run(userRequest(), { retry: { maxRetries: 2, initialDelayMs: 1 } });
    expect(LunationError.hasCode(error, 'rate-limited')).toBe(true);
    expect((error as Error).message).toContain('inside the stream');
    expect(parts).toEqual([{ type: 'text-delta', delta: 'Hal' }]);
    expect(server.requests).toHaveLength(1);
  });

  it('reports a server slower than `timeout` as a retryable "timeout"', async () => {
    server.enqueue({ ...sse(role, chunk({}, 'stop'), done), headersDelayMs: 500 });
    const { error } = await run(userRequest(), { timeout: 50 });
    expect(LunationError.hasCode(error, 'timeout')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(true);
  });

  it('gives up after the retries and says how many attempts it made', async () => {
    server.enqueue(jsonError(500, errorBody(500)), jsonError(502, errorBody(502)));
    const { error } = await run(userRequest(), { retry: { maxRetries: 1, initialDelayMs: 1 } });
    expect(LunationError.hasCode(error, 'provider-error')).toBe(true);
    expect((error as LunationError).status).toBe(502);
    expect((error as Error).message).toContain('gave up after 2 attempts');
    expect((error as LunationError).details).toMatchObject({ attempts: 2 });
  });
});
