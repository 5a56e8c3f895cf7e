import { LunationError, type ModelRequest } from '@lunation/contract';
import { collectStream, useScriptedServer } from '@lunation/provider-testkit';
import {
  chunk,
  done,
  insufficientQuota,
  streamHeaders,
  usageChunk,
} from '@lunation/provider-testkit/wires/openai-chat';
import OpenAI from 'openai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OpenAIModel, type OpenAIModelOptions } from './openai-model.js';

// Vendor edge cases replayed from recorded streams (issue #25): an exhausted quota, and DeepSeek reached through
// an injected client or OPENAI_BASE_URL.

const server = useScriptedServer();

function model(options: Partial<OpenAIModelOptions> = {}): OpenAIModel {
  return new OpenAIModel({
    model: 'gpt-4.1-mini',
    apiKey: 'sk-test',
    baseURL: `${server.url}/v1`,
    retry: { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 4 },
    ...options,
  });
}

function userRequest(text = 'Hi', extra: Partial<ModelRequest> = {}): ModelRequest {
  return { messages: [{ id: 'u1', role: 'user', content: [{ type: 'text', text }] }], tools: [], ...extra };
}

function expectQuotaError(error: unknown): void {
  expect(LunationError.hasCode(error, 'quota-exceeded')).toBe(true);
  const lunationError = error as LunationError;
  expect(lunationError.isRetryable).toBe(false);
  expect(lunationError.message).toContain('You exceeded your current quota');
  expect(lunationError.message).toContain('billing');
  expect(lunationError.details).toMatchObject({ code: 'insufficient_quota' });
}

describe('OpenAIModel: insufficient_quota', () => {
  it('an HTTP 429 with code insufficient_quota is a quota-exceeded error, not retried', async () => {
    server.enqueue(
      {
        status: 429,
        headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'req_q1' },
        body: JSON.stringify({ error: insufficientQuota }),
      },
      { status: 200, headers: streamHeaders(), body: [chunk({ content: 'never' }, 'stop'), done] },
    );
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expectQuotaError(error);
    expect((error as LunationError).status).toBe(429);
    expect((error as Error).message).toContain('HTTP 429 (insufficient_quota)');
    expect(parts).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it('an error frame with insufficient_quota inside a 200 stream is not retried either', async () => {
    server.enqueue(
      {
        status: 200,
        headers: streamHeaders(),
        body: [`data: ${JSON.stringify({ error: insufficientQuota })}\n\n`],
      },
      { status: 200, headers: streamHeaders(), body: [chunk({ content: 'never' }, 'stop'), done] },
    );
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expectQuotaError(error);
    expect(parts).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });
});

describe('OpenAIModel: DeepSeek without the baseURL option', () => {
  const history: ModelRequest = {
    messages: [
      { id: 'u1', role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      {
        id: 'a1',
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'I should call the weather tool.' },
          { type: 'tool-call', toolCallId: 'call_0', toolName: 'get_weather', arguments: '{"city":"Paris"}' },
        ],
      },
      {
        id: 't1',
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call_0',
            toolName: 'get_weather',
            result: { status: 'success', data: { celsius: 21 } },
          },
        ],
      },
    ],
    tools: [
      {
        name: 'get_weather',
        description: 'The weather in a city.',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ],
  };
  const answer = () => ({
    status: 200,
    headers: streamHeaders(),
    body: [
      chunk({ role: 'assistant', content: '', reasoning_content: 'It is warm.' }),
      chunk({ content: '21 °C.' }, 'stop'),
      usageChunk({
        inputTokens: 30,
        outputTokens: 9,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        reasoningTokens: 0,
      }),
      done,
    ],
  });

  const realFetch = globalThis.fetch;
  /** A fetch that sends requests for api.deepseek.com to the local server, over real HTTP. */
  const toLocalServer: typeof fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    expect(url.hostname).toBe('api.deepseek.com');
    return realFetch(`${server.url}/v1${url.pathname.replace(/^\/v1/, '')}${url.search}`, init);
  };

  function sentAssistant(): Record<string, unknown> {
    const body = server.requests[0]!.body as { messages: Array<Record<string, unknown>> };
    return body.messages.find((message) => message.role === 'assistant')!;
  }

  afterEach(() => {
    vi.unstubAllEnvs();
    vi.unstubAllGlobals();
  });

  it('an injected client pointing at api.deepseek.com sends the reasoning of tool-call turns back', async () => {
    server.enqueue(answer());
    const client = new OpenAI({
      apiKey: 'sk-deepseek',
      baseURL: 'https://api.deepseek.com',
      fetch: toLocalServer,
      maxRetries: 0,
    });
    const { error } = await collectStream(model({ model: 'deepseek-chat', client }).stream(history));
    expect(error).toBeUndefined();
    expect(sentAssistant().reasoning_content).toBe('I should call the weather tool.');
  });

  it('OPENAI_BASE_URL pointing at api.deepseek.com does the same', async () => {
    server.enqueue(answer());
    vi.stubEnv('OPENAI_BASE_URL', 'https://api.deepseek.com/v1');
    vi.stubGlobal('fetch', toLocalServer);
    const { error } = await collectStream(
      new OpenAIModel({ model: 'deepseek-chat', apiKey: 'sk-deepseek', maxRetries: 0 }).stream(history),
    );
    expect(error).toBeUndefined();
    expect(sentAssistant().reasoning_content).toBe('I should call the weather tool.');
  });

  it('an injected client for OpenAI itself still sends no reasoning back', async () => {
    server.enqueue(answer());
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
    const { error } = await collectStream(model({ client }).stream(history));
    expect(error).toBeUndefined();
    expect(sentAssistant()).not.toHaveProperty('reasoning_content');
  });
});

describe('OpenAIModel: a server that reports no usage', () => {
  it('yields a zero usage part marked unknown, not real zeros', async () => {
    server.enqueue({
      status: 200,
      headers: streamHeaders(),
      body: [chunk({ role: 'assistant', content: 'ok' }), chunk({}, 'stop'), done],
    });
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expect(error).toBeUndefined();
    expect(parts.filter((part) => part.type === 'usage')).toEqual([
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
    ]);
  });
});

describe('OpenAIModel: a tool call cut off by the token limit (finish_reason "length")', () => {
  const weatherTool = {
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  };

  it('fails with a typed, non-retryable error instead of ending the call with half its JSON', async () => {
    server.enqueue(
      {
        status: 200,
        headers: streamHeaders(),
        body: [
          chunk({ role: 'assistant', content: null }),
          chunk({
            tool_calls: [
              { index: 0, id: 'call_L', type: 'function', function: { name: 'get_weather', arguments: '' } },
            ],
          }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Pa' } }] }),
          chunk({}, 'length'),
          usageChunk({
            inputTokens: 50,
            outputTokens: 8,
            cacheReadTokens: 0,
            cacheWriteTokens: 0,
            reasoningTokens: 0,
          }),
          done,
        ],
      },
      { status: 200, headers: streamHeaders(), body: [chunk({ content: 'never' }, 'stop'), done] },
    );
    const { parts, error } = await collectStream(
      model().stream(userRequest('Weather?', { tools: [weatherTool] })),
    );
    expect(LunationError.hasCode(error, 'tool-invalid-arguments')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(false);
    expect((error as Error).message).toContain('"get_weather"');
    expect((error as Error).message).toContain('overrides.maxTokens');
    expect((error as LunationError).details).toMatchObject({
      toolCallId: 'call_L',
      toolName: 'get_weather',
      arguments: '{"city":"Pa',
    });
    expect(parts.map((part) => part.type)).toEqual(['tool-call-start', 'tool-call-delta']);
    expect(server.requests).toHaveLength(1);
  });

  it('a whole call before the limit still ends normally, with stop reason max-tokens', async () => {
    server.enqueue({
      status: 200,
      headers: streamHeaders(),
      body: [
        chunk({
          role: 'assistant',
          tool_calls: [
            {
              index: 0,
              id: 'call_M',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        }),
        chunk({}, 'length'),
        done,
      ],
    });
    const { parts, error } = await collectStream(
      model().stream(userRequest('Weather?', { tools: [weatherTool] })),
    );
    expect(error).toBeUndefined();
    expect(parts.find((part) => part.type === 'tool-call-end')).toMatchObject({
      arguments: '{"city":"Paris"}',
    });
    expect(parts.at(-1)).toMatchObject({ type: 'finish', stopReason: 'max-tokens' });
  });
});
