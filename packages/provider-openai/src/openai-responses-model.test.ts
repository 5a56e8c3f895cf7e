import { LunationError, type ModelRequest, type Usage } from '@lunation/contract';
import { assertStreamInvariants, collectStream, useScriptedServer } from '@lunation/provider-testkit';
import { errorBody } from '@lunation/provider-testkit/wires/openai-chat';
import { describe, expect, it } from 'vitest';
import {
  RESPONSE_ID,
  ResponsesStreamWriter,
  responsesSse,
  responsesStreamHeaders,
} from './__fixtures__/openai-responses-wire.js';
import { OpenAIResponsesModel, type OpenAIResponsesModelOptions } from './openai-responses-model.js';

const server = useScriptedServer();

function model(options: Partial<OpenAIResponsesModelOptions> = {}): OpenAIResponsesModel {
  return new OpenAIResponsesModel({
    model: 'gpt-5-mini',
    apiKey: 'sk-test',
    baseURL: `${server.url}/v1`,
    retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 4 },
    ...options,
  });
}

const usage: Usage = {
  inputTokens: 1_200,
  outputTokens: 340,
  cacheReadTokens: 1_024,
  cacheWriteTokens: 0,
  reasoningTokens: 256,
};
const zero: Usage = {
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};

const weatherTool = {
  name: 'get_weather',
  description: 'The current weather in a city.',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};
const searchTool = {
  name: 'search_notes',
  description: 'Search notes.',
  parameters: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer' } } },
};

function userRequest(text = 'Hi', extra: Partial<ModelRequest> = {}): ModelRequest {
  return { messages: [{ id: 'u1', role: 'user', content: [{ type: 'text', text }] }], tools: [], ...extra };
}

const done = () =>
  responsesSse(new ResponsesStreamWriter().created().message('msg_ok', ['ok']).completed(zero));

describe('OpenAIResponsesModel request', () => {
  it('sends the history as input items: reasoning with encrypted content, ids, tool calls and outputs, hosted items', async () => {
    server.enqueue(done());
    const webSearch = {
      id: 'ws_0a1b2c',
      type: 'web_search_call',
      status: 'completed',
      action: { type: 'search', query: 'Paris weather' },
    };
    const request: ModelRequest = {
      messages: [
        { id: 's', role: 'system', content: [{ type: 'text', text: 'You are terse.' }] },
        {
          id: 'u1',
          role: 'user',
          content: [
            { type: 'text', text: 'Weather here?' },
            { type: 'image', source: { type: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } },
          ],
        },
        {
          id: 'a1',
          role: 'assistant',
          content: [
            {
              type: 'reasoning',
              text: 'Looks like Paris.',
              providerMetadata: { openai: { itemId: 'rs_1', encryptedContent: 'gAAAAB-enc-1' } },
            },
            { type: 'provider-content', provider: 'openai', kind: 'web_search_call', value: webSearch },
            { type: 'provider-content', provider: 'anthropic', kind: 'server_tool_use', value: { id: 'x' } },
            { type: 'reasoning', text: 'Claude thinking', signature: 'sig' },
            { type: 'text', text: 'Checking.', providerMetadata: { openai: { itemId: 'msg_1' } } },
            {
              type: 'tool-call',
              toolCallId: 'call_1',
              toolName: 'get_weather',
              arguments: '{"city":"Paris"}',
              providerMetadata: { openai: { itemId: 'fc_1' } },
            },
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
        {
          id: 'a2',
          role: 'assistant',
          content: [
            { type: 'text', text: 'It is 21°C.' },
            { type: 'refusal', text: 'I will not guess tomorrow.' },
          ],
        },
        { id: 'u2', role: 'user', content: [{ type: 'text', text: 'Thanks' }] },
      ],
      tools: [weatherTool, searchTool],
      toolChoice: { type: 'tool', toolName: 'get_weather' },
      overrides: { temperature: 0.3, topP: 0.8, maxTokens: 800, reasoningEffort: 'high' },
    };
    const { error } = await collectStream(
      model({ headers: { 'x-team': 'lunation' }, hostedTools: [{ type: 'web_search' }] }).stream(request),
    );
    expect(error).toBeUndefined();
    const sent = server.requests[0]!;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/v1/responses');
    expect(sent.headers).toMatchObject({
      authorization: 'Bearer sk-test',
      'x-team': 'lunation',
      'x-stainless-retry-count': '0',
    });
    expect(sent.body).toEqual({
      model: 'gpt-5-mini',
      stream: true,
      store: false,
      include: ['reasoning.encrypted_content'],
      reasoning: { effort: 'high', summary: 'auto' },
      temperature: 0.3,
      top_p: 0.8,
      max_output_tokens: 800,
      tool_choice: { type: 'function', name: 'get_weather' },
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          description: weatherTool.description,
          parameters: weatherTool.parameters,
          strict: true,
        },
        {
          type: 'function',
          name: 'search_notes',
          description: searchTool.description,
          parameters: searchTool.parameters,
          strict: false,
        },
        { type: 'web_search' },
      ],
      input: [
        { role: 'system', content: 'You are terse.' },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Weather here?' },
            { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' },
          ],
        },
        {
          type: 'reasoning',
          id: 'rs_1',
          summary: [{ type: 'summary_text', text: 'Looks like Paris.' }],
          encrypted_content: 'gAAAAB-enc-1',
        },
        webSearch,
        {
          type: 'message',
          role: 'assistant',
          id: 'msg_1',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Checking.', annotations: [] }],
        },
        {
          type: 'function_call',
          call_id: 'call_1',
          name: 'get_weather',
          arguments: '{"city":"Paris"}',
          id: 'fc_1',
        },
        { type: 'function_call_output', call_id: 'call_1', output: '{"tempC":21}' },
        {
          role: 'assistant',
          content: [
            { type: 'output_text', text: 'It is 21°C.', annotations: [] },
            { type: 'refusal', refusal: 'I will not guess tomorrow.' },
          ],
        },
        { role: 'user', content: 'Thanks' },
      ],
    });
  });

  it('sends no reasoning settings to a model that does not reason, and asks for no encrypted content with store', async () => {
    server.enqueue(done(), done());
    await collectStream(model({ model: 'gpt-4.1-mini' }).stream(userRequest()));
    await collectStream(model({ store: true }).stream(userRequest()));
    const [plain, stored] = server.requests.map((request) => request.body as Record<string, unknown>);
    expect(plain).not.toHaveProperty('reasoning');
    expect(plain).not.toHaveProperty('include');
    expect(plain).not.toHaveProperty('tools');
    expect(stored).toMatchObject({ store: true, reasoning: { summary: 'auto' } });
    expect(stored).not.toHaveProperty('include');
  });

  it('maps responseFormat to text.format json_schema and deep-merges extraBody', async () => {
    server.enqueue(done());
    const schema = {
      type: 'object',
      properties: { answer: { type: 'string' } },
      required: ['answer'],
      additionalProperties: false,
    };
    await collectStream(
      model({ reasoningSummary: null }).stream(
        userRequest('Answer', {
          responseFormat: { type: 'json', schema, name: 'answer', description: 'The answer.' },
          overrides: { reasoningEffort: { budgetTokens: 2_000 } },
          providerOptions: {
            openai: { extraBody: { text: { verbosity: 'low' }, safety_identifier: 'u-42' } },
          },
        }),
      ),
    );
    const body = server.requests[0]!.body as Record<string, unknown>;
    expect(body.text).toEqual({
      format: { type: 'json_schema', name: 'answer', description: 'The answer.', schema, strict: true },
      verbosity: 'low',
    });
    expect(body.reasoning).toEqual({ effort: 'low' });
    expect(body.safety_identifier).toBe('u-42');
  });

  it('rejects stop sequences, which the Responses API lacks, before sending anything', async () => {
    const { error } = await collectStream(
      model().stream(userRequest('Hi', { overrides: { stopSequences: ['END'] } })),
    );
    expect(LunationError.hasCode(error, 'invalid-argument')).toBe(true);
    expect((error as Error).message).toContain('OpenAIModel');
    expect(server.requests).toHaveLength(0);
  });
});

describe('OpenAIResponsesModel stream', () => {
  it('streams reasoning summaries, then text, keeping item ids and the encrypted reasoning; usage with cache and reasoning', async () => {
    const writer = new ResponsesStreamWriter()
      .created()
      .reasoning('rs_A', [['**Plan**', '\n\nCheck'], [' the units.']], 'gAAAAB-final-encrypted')
      .message('msg_B', ['It is ', '21°C.'])
      .completed(usage);
    server.enqueue(responsesSse(writer));
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    expect(parts).toEqual([
      { type: 'reasoning-delta', delta: '**Plan**' },
      { type: 'reasoning-delta', delta: '\n\nCheck' },
      // Each summary part is a reasoning block of its own (sent back as its own summary part).
      { type: 'reasoning-delta', delta: '', providerMetadata: { openai: { itemId: 'rs_A' } } },
      { type: 'reasoning-delta', delta: ' the units.' },
      {
        type: 'reasoning-delta',
        delta: '',
        providerMetadata: { openai: { itemId: 'rs_A', encryptedContent: 'gAAAAB-final-encrypted' } },
      },
      { type: 'text-delta', delta: 'It is ' },
      { type: 'text-delta', delta: '21°C.' },
      { type: 'text-delta', delta: '', providerMetadata: { openai: { itemId: 'msg_B' } } },
      { type: 'usage', usage },
      {
        type: 'finish',
        stopReason: 'end-turn',
        rawStopReason: 'completed',
        providerMetadata: { openai: { responseId: RESPONSE_ID } },
      },
    ]);
  });

  it('streams a function call: start, argument pieces, an end with its item id; stop reason tool-use', async () => {
    const writer = new ResponsesStreamWriter()
      .created()
      .call('fc_1', 'call_W1', 'get_weather', ['{"ci', 'ty":"Pa', 'ris"}'])
      .call('fc_2', 'call_W2', 'get_weather', ['{"city":"Oslo"}'])
      .completed(usage);
    server.enqueue(responsesSse(writer));
    const { parts, error } = await collectStream(model().stream(userRequest('Go', { tools: [weatherTool] })));
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    expect(parts.slice(0, -2)).toEqual([
      { type: 'tool-call-start', toolCallId: 'call_W1', toolName: 'get_weather' },
      { type: 'tool-call-delta', toolCallId: 'call_W1', argumentsDelta: '{"ci' },
      { type: 'tool-call-delta', toolCallId: 'call_W1', argumentsDelta: 'ty":"Pa' },
      { type: 'tool-call-delta', toolCallId: 'call_W1', argumentsDelta: 'ris"}' },
      {
        type: 'tool-call-end',
        toolCallId: 'call_W1',
        toolName: 'get_weather',
        arguments: '{"city":"Paris"}',
        providerMetadata: { openai: { itemId: 'fc_1' } },
      },
      { type: 'tool-call-start', toolCallId: 'call_W2', toolName: 'get_weather' },
      { type: 'tool-call-delta', toolCallId: 'call_W2', argumentsDelta: '{"city":"Oslo"}' },
      {
        type: 'tool-call-end',
        toolCallId: 'call_W2',
        toolName: 'get_weather',
        arguments: '{"city":"Oslo"}',
        providerMetadata: { openai: { itemId: 'fc_2' } },
      },
    ]);
    expect(parts.at(-1)).toMatchObject({
      type: 'finish',
      stopReason: 'tool-use',
      rawStopReason: 'completed',
    });
  });

  it('streams a refusal as refusal-delta parts with stop reason "refusal"', async () => {
    const writer = new ResponsesStreamWriter()
      .created()
      .refusal('msg_R', ["I'm sorry, ", "I can't help with that."])
      .completed(zero);
    server.enqueue(responsesSse(writer));
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expect(error).toBeUndefined();
    expect(parts.slice(0, 2)).toEqual([
      { type: 'refusal-delta', delta: "I'm sorry, " },
      { type: 'refusal-delta', delta: "I can't help with that." },
    ]);
    expect(parts.some((part) => part.type === 'text-delta')).toBe(false);
    expect(parts.at(-1)).toMatchObject({ type: 'finish', stopReason: 'refusal' });
  });

  it("keeps a hosted tool's item as a provider-content part, in stream order", async () => {
    const item = {
      id: 'ws_68c1',
      type: 'web_search_call',
      status: 'completed',
      action: { type: 'search', query: 'weather Paris today' },
    };
    const writer = new ResponsesStreamWriter()
      .created()
      .hostedItem(item, [
        'response.web_search_call.in_progress',
        'response.web_search_call.searching',
        'response.web_search_call.completed',
      ])
      .message(
        'msg_C',
        ['Sunny.'],
        [
          {
            type: 'url_citation',
            start_index: 0,
            end_index: 6,
            url: 'https://example.com',
            title: 'Weather',
          },
        ],
      )
      .completed(usage);
    server.enqueue(responsesSse(writer));
    const { parts, error } = await collectStream(
      model({ hostedTools: [{ type: 'web_search' }] }).stream(userRequest()),
    );
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    expect(parts.slice(0, 3)).toEqual([
      { type: 'provider-content', provider: 'openai', kind: 'web_search_call', value: item },
      { type: 'text-delta', delta: 'Sunny.' },
      {
        type: 'text-delta',
        delta: '',
        providerMetadata: {
          openai: {
            itemId: 'msg_C',
            annotations: [
              {
                type: 'url_citation',
                start_index: 0,
                end_index: 6,
                url: 'https://example.com',
                title: 'Weather',
              },
            ],
          },
        },
      },
    ]);
  });

  it.each([
    ['max_output_tokens', 'max-tokens'],
    ['content_filter', 'content-filter'],
  ] as const)('maps response.incomplete (%s) to %s, with its usage', async (reason, stopReason) => {
    const writer = new ResponsesStreamWriter().created();
    writer.openMessage('msg_I', writer.nextOutputIndex()).textDelta('msg_I', 'Part');
    writer.closeMessage('msg_I', 'Part').incomplete(reason, usage);
    server.enqueue(responsesSse(writer));
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expect(error).toBeUndefined();
    expect(parts.at(-2)).toEqual({ type: 'usage', usage });
    expect(parts.at(-1)).toMatchObject({ type: 'finish', stopReason, rawStopReason: `incomplete:${reason}` });
  });

  it('takes text and reasoning sent only whole in output_item.done (servers that stream no deltas)', async () => {
    const writer = new ResponsesStreamWriter().created();
    writer.event('response.output_item.added', {
      output_index: 0,
      item: { id: 'rs_W', type: 'reasoning', summary: [] },
    });
    writer.event('response.output_item.done', {
      output_index: 0,
      item: {
        id: 'rs_W',
        type: 'reasoning',
        summary: [],
        content: [{ type: 'reasoning_text', text: 'Raw thought.' }],
      },
    });
    writer.event('response.output_item.added', {
      output_index: 1,
      item: { id: 'msg_W', type: 'message', status: 'in_progress', content: [], role: 'assistant' },
    });
    writer.event('response.output_item.done', {
      output_index: 1,
      item: {
        id: 'msg_W',
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Whole answer.', annotations: [] }],
      },
    });
    writer.completed(zero);
    server.enqueue(responsesSse(writer));
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expect(error).toBeUndefined();
    expect(parts.slice(0, 2)).toEqual([
      {
        type: 'reasoning-delta',
        delta: 'Raw thought.',
        providerMetadata: { openai: { itemId: 'rs_W', reasoningSource: 'content' } },
      },
      { type: 'text-delta', delta: 'Whole answer.', providerMetadata: { openai: { itemId: 'msg_W' } } },
    ]);
  });
});

describe('OpenAIResponsesModel errors and stalls', () => {
  it('throws an error event after a part, mapped by its code, without retrying; the part stands', async () => {
    const writer = new ResponsesStreamWriter().created();
    writer.openMessage('msg_E', writer.nextOutputIndex()).textDelta('msg_E', 'Hel');
    writer.failed(
      'rate_limit_exceeded',
      'Rate limit reached for gpt-5-mini on tokens per min (TPM).',
      'tokens',
    );
    server.enqueue(responsesSse(writer), done());
    const { parts, error } = await collectStream(
      model({ retry: { maxRetries: 2, initialDelayMs: 1 } }).stream(userRequest()),
    );
    expect(LunationError.hasCode(error, 'rate-limited')).toBe(true);
    expect((error as Error).message).toContain('Rate limit reached');
    expect(parts).toEqual([{ type: 'text-delta', delta: 'Hel' }]);
    expect(server.requests).toHaveLength(1);
  });

  it('retries a response.failed that came before any part when its code is retryable', async () => {
    const failed = new ResponsesStreamWriter().created();
    failed.event('response.failed', {
      response: {
        id: 'resp_failed',
        object: 'response',
        status: 'failed',
        error: { code: 'server_error', message: 'The server had an error processing your request.' },
        output: [],
      },
    });
    server.enqueue(responsesSse(failed), done());
    const { parts, error } = await collectStream(
      model({ retry: { maxRetries: 1, initialDelayMs: 1 } }).stream(userRequest()),
    );
    expect(error).toBeUndefined();
    expect(parts[0]).toEqual({ type: 'text-delta', delta: 'ok' });
    expect(server.requests).toHaveLength(2);
  });

  it('reports a response.failed with a code that is not retryable as such', async () => {
    const failed = new ResponsesStreamWriter().created();
    failed.event('response.failed', {
      response: {
        id: 'resp_failed',
        object: 'response',
        status: 'failed',
        error: { code: 'invalid_prompt', message: 'Invalid prompt: your prompt was flagged.' },
        output: [],
      },
    });
    server.enqueue(responsesSse(failed));
    const { error } = await collectStream(
      model({ retry: { maxRetries: 2, initialDelayMs: 1 } }).stream(userRequest()),
    );
    expect(LunationError.hasCode(error, 'invalid-request')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(false);
    expect(server.requests).toHaveLength(1);
    expect((error as Error).message).toContain('response.failed, invalid_prompt');
    expect((error as LunationError).details).toMatchObject({ code: 'invalid_prompt' });
  });

  it('maps HTTP errors with the shared table (429 with Retry-After)', async () => {
    server.enqueue({
      status: 429,
      headers: { 'content-type': 'application/json', 'retry-after': '3', 'x-request-id': 'req_r1' },
      body: JSON.stringify(errorBody(429)),
    });
    const { error } = await collectStream(model().stream(userRequest()));
    expect(LunationError.hasCode(error, 'rate-limited')).toBe(true);
    expect((error as LunationError).retryAfterMs).toBe(3_000);
    expect((error as LunationError).details).toMatchObject({ requestId: 'req_r1' });
  });

  it('a stream that stalls before its first part fails with a retryable "timeout"', async () => {
    server.enqueue({ ...responsesSse(new ResponsesStreamWriter().created()), ending: 'hang' });
    const { parts, error } = await collectStream(model({ streamIdleTimeoutMs: 150 }).stream(userRequest()));
    expect(LunationError.hasCode(error, 'timeout')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(true);
    expect(parts).toEqual([]);
    expect(await server.requests[0]!.outcome).toBe('client-closed');
  });

  it('a stream that sends one text part and then nothing fails with "stream-interrupted", keeping the part', async () => {
    const writer = new ResponsesStreamWriter().created();
    writer.openMessage('msg_S', writer.nextOutputIndex()).textDelta('msg_S', 'Hel');
    server.enqueue({ ...responsesSse(writer), ending: 'hang' }, done());
    const { parts, error } = await collectStream(
      model({ streamIdleTimeoutMs: 150, retry: { maxRetries: 2, initialDelayMs: 1 } }).stream(userRequest()),
    );
    expect(LunationError.hasCode(error, 'stream-interrupted')).toBe(true);
    expect(parts).toEqual([{ type: 'text-delta', delta: 'Hel' }]);
    expect(server.requests).toHaveLength(1);
    expect(await server.requests[0]!.outcome).toBe('client-closed');
  });

  it('uses the Responses stream headers', () => {
    expect(responsesStreamHeaders()['content-type']).toBe('text/event-stream; charset=utf-8');
  });
});
