import { type JsonObject, LunationError, type ModelRequest } from '@lunation/contract';
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
  event,
  messageDelta,
  messageStart,
  messageStop,
  ping,
  streamHeaders,
} from '@lunation/provider-testkit/wires/anthropic-messages';
import { describe, expect, it } from 'vitest';
import { messageDeltaWith, refusalStream } from './__fixtures__/anthropic-recorded.js';
import { AnthropicModel, type AnthropicModelOptions } from './anthropic-model.js';

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

const sse = (...events: string[]) => ({ status: 200, headers: streamHeaders(), body: events });

function textReply(text: string) {
  return sse(
    messageStart(),
    blockStart(0, { type: 'text', text: '' }),
    blockDelta(0, { type: 'text_delta', text }),
    blockStop(0),
    messageDelta('end_turn', { output_tokens: 3 }),
    messageStop,
  );
}

const weatherTool = {
  name: 'get_weather',
  description: 'The current weather in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const timeTool = { name: 'get_time', description: 'The time in a zone.', parameters: { type: 'object' } };

function userRequest(extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    messages: [{ id: 'u1', role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    tools: [],
    ...extra,
  };
}

const sentBody = (index = 0) => server.requests[index]!.body as Record<string, unknown>;

describe('AnthropicModel: a stalled stream', () => {
  it('fails with a retryable "timeout" when nothing arrives within streamIdleTimeoutMs, closing the connection', async () => {
    server.enqueue({ ...sse(messageStart(), ping), ending: 'hang' });
    const { parts, error } = await collectStream(model({ streamIdleTimeoutMs: 150 }).stream(userRequest()));
    expect(LunationError.hasCode(error, 'timeout')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(true);
    expect((error as Error).message).toContain('150 ms');
    expect(parts).toEqual([]);
    expect(await server.requests[0]!.outcome).toBe('client-closed');
  });

  it('retries a stall before the first part and then answers', async () => {
    server.enqueue({ ...sse(messageStart(), ping), ending: 'hang' }, textReply('second try'));
    const { parts, error } = await collectStream(
      model({ streamIdleTimeoutMs: 150, retry: { maxRetries: 1, initialDelayMs: 1, maxDelayMs: 2 } }).stream(
        userRequest(),
      ),
    );
    expect(error).toBeUndefined();
    expect(summarizeParts(parts).text).toBe('second try');
    expect(server.requests).toHaveLength(2);
  });

  it('fails with "stream-interrupted" after one part, keeps the part and does not retry', async () => {
    server.enqueue(
      {
        ...sse(
          messageStart(),
          blockStart(0, { type: 'text', text: '' }),
          blockDelta(0, { type: 'text_delta', text: 'Hel' }),
        ),
        ending: 'hang',
      },
      textReply('never served'),
    );
    const { parts, error } = await collectStream(
      model({ streamIdleTimeoutMs: 150, retry: { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 2 } }).stream(
        userRequest(),
      ),
    );
    expect(LunationError.hasCode(error, 'stream-interrupted')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(false);
    expect((error as Error).message).toContain('partial answer is kept');
    expect(parts).toEqual([{ type: 'text-delta', delta: 'Hel' }]);
    expect(server.requests).toHaveLength(1);
    expect(await server.requests[0]!.outcome).toBe('client-closed');
  });
});

describe('AnthropicModel: a second message_start', () => {
  const FIRST_ID = 'msg_01XFDUDYJgAACzvnptvVoYEL';
  function startOf(id: string, usage: Record<string, unknown>) {
    return event({
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model: 'claude-haiku-4-5',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage,
      },
    });
  }
  // A gateway repeating the frame of the same message (same id).
  const duplicate = startOf(FIRST_ID, { input_tokens: 99, output_tokens: 1 });
  // An intermediary that lost its upstream mid-generation and spliced a retried generation into the body.
  const spliced = startOf('msg_02SplicedRetryGeneration', { input_tokens: 40, output_tokens: 1 });

  it('a repeated frame of the same message is ignored: parts once, usage not overwritten', async () => {
    server.enqueue(
      sse(
        messageStart({ input_tokens: 10, output_tokens: 1 }),
        duplicate,
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'Par' }),
        duplicate,
        blockDelta(0, { type: 'text_delta', text: 'is' }),
        blockStop(0),
        messageDelta('end_turn', { output_tokens: 2 }),
        messageStop,
      ),
    );
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    expect(parts.filter((part) => part.type === 'text-delta')).toEqual([
      { type: 'text-delta', delta: 'Par' },
      { type: 'text-delta', delta: 'is' },
    ]);
    expect(parts.find((part) => part.type === 'usage')).toMatchObject({
      usage: { inputTokens: 10, outputTokens: 2 },
    });
    expect(server.requests).toHaveLength(1);
  });

  it('a spliced generation before any part was streamed replaces the cut-off one: nothing of the first is kept', async () => {
    server.enqueue(
      sse(
        messageStart({ input_tokens: 10, output_tokens: 1 }),
        ping,
        // The cut-off generation had only opened a thinking block: nothing of it was streamed yet.
        blockStart(0, { type: 'thinking', thinking: '', signature: '' }),
        spliced,
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'ok' }),
        blockStop(0),
        messageDelta('end_turn', { output_tokens: 3 }),
        messageStop,
      ),
      textReply('never served'),
    );
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    expect(summarizeParts(parts).text).toBe('ok');
    expect(parts.filter((part) => part.type === 'reasoning-delta')).toEqual([]);
    expect(parts.find((part) => part.type === 'usage')).toMatchObject({
      usage: { inputTokens: 40, outputTokens: 3 },
    });
    expect(server.requests).toHaveLength(1);
  });

  it('a spliced generation after parts were streamed fails, typed and not retried: the parts streamed stand, nothing of the second generation is added', async () => {
    server.enqueue(
      sse(
        messageStart(),
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'Par' }),
        spliced,
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'Paris is the capital.' }),
        blockStop(0),
        messageDelta('end_turn', { output_tokens: 2 }),
        messageStop,
      ),
      textReply('never served'),
    );
    const { parts, error } = await collectStream(
      model({ retry: { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 2 } }).stream(userRequest()),
    );
    expect(LunationError.hasCode(error, 'stream-interrupted')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(false);
    expect((error as Error).message).toContain(
      `second message_start (message msg_02SplicedRetryGeneration) while message ${FIRST_ID} was still open`,
    );
    expect((error as LunationError).details).toMatchObject({
      messageId: 'msg_02SplicedRetryGeneration',
      openMessageId: FIRST_ID,
    });
    expect(parts).toEqual([{ type: 'text-delta', delta: 'Par' }]);
    expect(server.requests).toHaveLength(1);
  });
});

describe('AnthropicModel: refusals', () => {
  const stopDetails = {
    type: 'refusal',
    category: 'cyber',
    explanation:
      "This request triggered restrictions on violative cyber content and was blocked under Anthropic's Usage Policy.",
    recommended_model: 'claude-fable-5',
  };

  it('reports the refusal stop reason, the explanation as a refusal part and stop_details in the finish metadata', async () => {
    server.enqueue(sse(...refusalStream(stopDetails)));
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    expect(parts).toEqual([
      { type: 'refusal-delta', delta: stopDetails.explanation },
      {
        type: 'usage',
        usage: {
          inputTokens: 18,
          outputTokens: 5,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          reasoningTokens: 0,
        },
      },
      {
        type: 'finish',
        stopReason: 'refusal',
        rawStopReason: 'refusal',
        providerMetadata: { anthropic: { stop_details: stopDetails } },
      },
    ]);
  });

  it('keeps text streamed before the refusal apart from it and names the category when there is no explanation', async () => {
    server.enqueue(
      sse(
        ...refusalStream({ type: 'refusal', category: 'bio', explanation: null }, [
          blockStart(0, { type: 'text', text: '' }),
          blockDelta(0, { type: 'text_delta', text: 'Step one is' }),
          blockStop(0),
        ]),
      ),
    );
    const { parts } = await collectStream(model().stream(userRequest()));
    expect(parts.slice(0, 2)).toEqual([
      { type: 'text-delta', delta: 'Step one is' },
      { type: 'refusal-delta', delta: 'The model declined to answer (refusal category: bio).' },
    ]);
    expect(summarizeParts(parts).stopReason).toBe('refusal');
  });

  it('does not send a refusal part back', async () => {
    server.enqueue(textReply('ok'));
    await collectStream(
      model().stream({
        messages: [
          { id: 'u1', role: 'user', content: [{ type: 'text', text: 'Hi' }] },
          {
            id: 'a1',
            role: 'assistant',
            content: [
              { type: 'text', text: 'Step one is' },
              { type: 'refusal', text: 'The model declined to answer.' },
            ],
          },
          { id: 'u2', role: 'user', content: [{ type: 'text', text: 'Something else, then.' }] },
        ],
        tools: [],
      }),
    );
    expect(sentBody().messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Step one is' }] },
      { role: 'user', content: [{ type: 'text', text: 'Something else, then.' }] },
    ]);
  });
});

describe('AnthropicModel: extraBody', () => {
  it('is merged deeply: it adds to the output_config effort that reasoningEffort set instead of replacing it', async () => {
    server.enqueue(textReply('ok'));
    await collectStream(
      model({ model: 'claude-opus-4-6' }).stream(
        userRequest({
          overrides: { reasoningEffort: 'high', stopSequences: ['###'] },
          providerOptions: {
            anthropic: {
              extraBody: {
                output_config: { task_budget: { type: 'tokens', total: 20_000 } },
                metadata: { user_id: 'u-42' },
                stop_sequences: ['END'],
              },
            },
          },
        }),
      ),
    );
    const body = sentBody();
    expect(body.output_config).toEqual({ effort: 'high', task_budget: { type: 'tokens', total: 20_000 } });
    expect(body.thinking).toEqual({ type: 'adaptive' });
    expect(body.metadata).toEqual({ user_id: 'u-42' });
    expect(body.stop_sequences).toEqual(['END']);
  });

  it('removes a field the adapter set when extraBody gives it as null', async () => {
    server.enqueue(textReply('ok'));
    await collectStream(
      model().stream(
        userRequest({
          overrides: { reasoningEffort: 'low' },
          providerOptions: { anthropic: { extraBody: { thinking: null } } },
        }),
      ),
    );
    expect(sentBody()).not.toHaveProperty('thinking');
    expect(sentBody().max_tokens).toBe(4_096);
  });

  it('refuses n > 1 before sending anything, and leaves n: 1 out', async () => {
    for (const providerOptions of [{ extraBody: { n: 3 } }, { n: 2 }] as JsonObject[]) {
      const { error } = await collectStream(
        model().stream(userRequest({ providerOptions: { anthropic: providerOptions } })),
      );
      expect(LunationError.hasCode(error, 'invalid-argument')).toBe(true);
      expect((error as Error).message).toMatch(/one answer per call.*call the model once per answer/);
    }
    expect(server.requests).toHaveLength(0);
    server.enqueue(textReply('ok'));
    const { error } = await collectStream(
      model().stream(userRequest({ providerOptions: { anthropic: { extraBody: { n: 1 } } } })),
    );
    expect(error).toBeUndefined();
    expect(sentBody()).not.toHaveProperty('n');
  });
});

describe('AnthropicModel: a forced tool choice with thinking', () => {
  it('keeps thinking and sends tool_choice auto for "required"', async () => {
    server.enqueue(textReply('ok'));
    await collectStream(
      model().stream(
        userRequest({
          tools: [weatherTool, timeTool],
          toolChoice: 'required',
          overrides: { reasoningEffort: 'low' },
        }),
      ),
    );
    expect(sentBody()).toMatchObject({
      thinking: { type: 'enabled', budget_tokens: 2_048 },
      tool_choice: { type: 'auto' },
    });
    expect((sentBody().tools as Array<{ name: string }>).map((tool) => tool.name)).toEqual([
      'get_weather',
      'get_time',
    ]);
  });

  it('keeps adaptive thinking and offers only the forced tool, with tool_choice auto', async () => {
    server.enqueue(textReply('ok'));
    await collectStream(
      model({ model: 'claude-sonnet-5-5' }).stream(
        userRequest({
          tools: [weatherTool, timeTool],
          toolChoice: { type: 'tool', toolName: 'get_time' },
          overrides: { reasoningEffort: 'medium' },
        }),
      ),
    );
    expect(sentBody()).toMatchObject({ thinking: { type: 'adaptive' }, tool_choice: { type: 'auto' } });
    expect((sentBody().tools as Array<{ name: string }>).map((tool) => tool.name)).toEqual(['get_time']);
  });

  it('forces the tool as asked when thinking is off', async () => {
    server.enqueue(textReply('a'), textReply('b'));
    await collectStream(
      model().stream(
        userRequest({ tools: [weatherTool], toolChoice: 'required', overrides: { reasoningEffort: 'none' } }),
      ),
    );
    await collectStream(
      model().stream(
        userRequest({ tools: [weatherTool], toolChoice: { type: 'tool', toolName: 'get_weather' } }),
      ),
    );
    expect(sentBody(0)).toMatchObject({ thinking: { type: 'disabled' }, tool_choice: { type: 'any' } });
    expect(sentBody(1).tool_choice).toEqual({ type: 'tool', name: 'get_weather' });
    expect(sentBody(1)).not.toHaveProperty('thinking');
  });
});

describe('AnthropicModel: structured output', () => {
  const schema = {
    type: 'object',
    properties: { city: { type: 'string' }, tempC: { type: 'number' } },
    required: ['city', 'tempC'],
    additionalProperties: false,
  };

  it('sends responseFormat as output_config.format beside the effort, and streams the JSON answer as text', async () => {
    server.enqueue(
      sse(
        messageStart(),
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: '{"city":"Paris",' }),
        blockDelta(0, { type: 'text_delta', text: '"tempC":21}' }),
        blockStop(0),
        messageDeltaWith({ stop_reason: 'end_turn' }, { output_tokens: 12 }),
        messageStop,
      ),
    );
    const { parts, error } = await collectStream(
      model({ model: 'claude-sonnet-5-5' }).stream(
        userRequest({
          responseFormat: { type: 'json', schema, name: 'weather' },
          overrides: { reasoningEffort: 'low' },
        }),
      ),
    );
    expect(error).toBeUndefined();
    expect(sentBody().output_config).toEqual({ effort: 'low', format: { type: 'json_schema', schema } });
    const summary = summarizeParts(parts);
    expect(JSON.parse(summary.text)).toEqual({ city: 'Paris', tempC: 21 });
    expect(summary.stopReason).toBe('end-turn');
  });

  it('sends only the format when there is no effort', async () => {
    server.enqueue(textReply('{}'));
    await collectStream(model().stream(userRequest({ responseFormat: { type: 'json', schema } })));
    expect(sentBody().output_config).toEqual({ format: { type: 'json_schema', schema } });
  });

  it('moves the constraints output_config.format rejects into descriptions, as the Anthropic SDK does', async () => {
    server.enqueue(textReply('{}'));
    const withConstraints = {
      type: 'object',
      properties: {
        // z.number().int(): the safe-integer range says nothing and is dropped.
        count: { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 },
        score: { type: 'number', minimum: 0, exclusiveMaximum: 10, description: 'How good.' },
        name: { type: 'string', minLength: 1, maxLength: 80 },
        email: { type: 'string', format: 'email', pattern: '^\\S+@\\S+$' },
        when: { type: 'string', format: 'date-time' },
        color: { type: 'string', format: 'hex-color' },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 5, uniqueItems: true },
        pair: { type: 'array', items: { type: 'number' }, minItems: 2 },
        shape: {
          oneOf: [
            { type: 'object', properties: { radius: { type: 'number', exclusiveMinimum: 0 } } },
            { $ref: '#/$defs/square' },
          ],
        },
        counts: {
          type: 'object',
          propertyNames: { type: 'string' },
          additionalProperties: { type: 'number' },
        },
      },
      required: ['count', 'score', 'name', 'email', 'when', 'color', 'tags', 'pair', 'shape', 'counts'],
      additionalProperties: false,
      $defs: { square: { type: 'object', properties: { side: { type: 'number', multipleOf: 0.5 } } } },
      $schema: 'http://json-schema.org/draft-07/schema#',
    };
    await collectStream(
      model().stream(userRequest({ responseFormat: { type: 'json', schema: withConstraints } })),
    );
    expect(sentBody().output_config).toEqual({
      format: {
        type: 'json_schema',
        schema: {
          type: 'object',
          properties: {
            count: { type: 'integer' },
            score: { type: 'number', description: 'How good.\n\n{minimum: 0, exclusiveMaximum: 10}' },
            name: { type: 'string', description: '{minLength: 1, maxLength: 80}' },
            email: { type: 'string', format: 'email', description: '{pattern: "^\\\\S+@\\\\S+$"}' },
            when: { type: 'string', format: 'date-time' },
            color: { type: 'string', description: '{format: "hex-color"}' },
            tags: {
              type: 'array',
              items: { type: 'string' },
              minItems: 1,
              description: '{maxItems: 5, uniqueItems: true}',
            },
            pair: { type: 'array', items: { type: 'number' }, description: '{minItems: 2}' },
            shape: {
              anyOf: [
                {
                  type: 'object',
                  properties: { radius: { type: 'number', description: '{exclusiveMinimum: 0}' } },
                  additionalProperties: false,
                },
                { $ref: '#/$defs/square' },
              ],
            },
            counts: {
              type: 'object',
              additionalProperties: { type: 'number' },
              description: '{propertyNames: {"type":"string"}}',
            },
          },
          required: ['count', 'score', 'name', 'email', 'when', 'color', 'tags', 'pair', 'shape', 'counts'],
          additionalProperties: false,
          $defs: {
            square: {
              type: 'object',
              properties: { side: { type: 'number', description: '{multipleOf: 0.5}' } },
              additionalProperties: false,
            },
          },
        },
      },
    });
    expect(withConstraints.properties.count).toEqual({
      type: 'integer',
      minimum: -9007199254740991,
      maximum: 9007199254740991,
    });
  });
});
