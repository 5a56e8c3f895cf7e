import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModelV4 } from '@ai-sdk/provider';
import type { Usage } from '@lunation/contract';
import { useScriptedServer } from '@lunation/provider-testkit';
import {
  blockDelta,
  blockStart,
  blockStop,
  messageDelta,
  messageStart,
  messageStop,
  ping,
  streamHeaders,
} from '@lunation/provider-testkit/wires/anthropic-messages';
import {
  chunk,
  done,
  streamHeaders as openaiHeaders,
  usageChunk,
} from '@lunation/provider-testkit/wires/openai-chat';
import { createRuntime, defineTool } from '@lunation/runtime';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { AiSdkModel } from './ai-sdk-model.js';

const server = useScriptedServer();

const weatherSchema = z.object({
  city: z.string(),
  celsius: z.number().int(),
  conditions: z.enum(['sunny', 'cloudy', 'rain']),
});
const weather = { city: 'Paris', celsius: 21, conditions: 'sunny' };

function runtimeWith(model: LanguageModelV4, agent: { output?: z.ZodType } = {}) {
  const calls: unknown[] = [];
  const getWeather = defineTool({
    name: 'get_weather',
    description: 'The current weather in a city.',
    input: z.object({ city: z.string() }),
    execute: ({ city }) => {
      calls.push(city);
      return { city, tempC: 21, sky: 'clear' };
    },
  });
  const runtime = createRuntime()
    .model('main', new AiSdkModel({ model }))
    .agent({
      id: 'assistant',
      model: 'main',
      systemPrompt: 'You report the weather.',
      tools: [getWeather],
      ...agent,
    })
    .build();
  return { runtime, calls };
}

const bodies = () => server.requests.map((request) => request.body as Record<string, unknown>);
const repairText = /^Your answer is not valid: the answer is not JSON \(.+\)\. Answer again/;
const secondRepairText = /^Your answer is not valid: conditions: /;

describe('AiSdkModel with @ai-sdk/openai (Chat Completions) and structured output in the agent loop', () => {
  const usage: Usage = {
    inputTokens: 90,
    outputTokens: 12,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
  };
  const sse = (...events: string[]) => ({ status: 200, headers: openaiHeaders(), body: events });
  const role = chunk({ role: 'assistant', content: '', refusal: null });
  const answer = (...pieces: string[]) =>
    sse(role, ...pieces.map((content) => chunk({ content })), chunk({}, 'stop'), usageChunk(usage), done);
  const openai = () => createOpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1` }).chat('gpt-4.1-mini');
  /** The AI SDK asks for strict Structured Outputs by default. */
  const responseFormat = {
    type: 'json_schema',
    json_schema: {
      name: 'output',
      strict: true,
      schema: {
        type: 'object',
        properties: {
          city: { type: 'string' },
          celsius: { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 },
          conditions: { type: 'string', enum: ['sunny', 'cloudy', 'rain'] },
        },
        required: ['city', 'celsius', 'conditions'],
        additionalProperties: false,
      },
    },
  };

  it('calls a tool, then answers JSON: result.output is the typed object; every request asks for json_schema', async () => {
    server.enqueue(
      sse(
        role,
        chunk({
          tool_calls: [
            { index: 0, id: 'call_W1', type: 'function', function: { name: 'get_weather', arguments: '' } },
          ],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] }),
        chunk({}, 'tool_calls'),
        usageChunk(usage),
        done,
      ),
      answer('{"city":"Par', 'is","celsius":21,', '"conditions":"sunny"}'),
    );
    const { runtime, calls } = runtimeWith(openai());
    const result = await runtime.generate({
      threadId: 'thread-1',
      input: 'Weather in Paris?',
      output: weatherSchema,
    });

    expectTypeOf(result.output).toEqualTypeOf<
      { city: string; celsius: number; conditions: 'sunny' | 'cloudy' | 'rain' } | undefined
    >();
    expect(result.output).toEqual(weather);
    expect(result).toMatchObject({ status: 'done', termination: { type: 'natural-end' }, steps: 2 });
    expect(calls).toEqual(['Paris']);
    expect(server.requests.map((request) => request.path)).toEqual([
      '/v1/chat/completions',
      '/v1/chat/completions',
    ]);
    for (const body of bodies()) {
      expect(body.response_format).toEqual(responseFormat);
      expect(body.tools).toHaveLength(1);
    }
    expect((bodies()[1]!.messages as unknown[]).at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_W1',
      content: '{"city":"Paris","tempC":21,"sky":"clear"}',
    });
  });

  it('repairs a prose first answer: the model sees its answer and what was wrong, then answers JSON', async () => {
    server.enqueue(
      answer('It is 21°C and sunny in Paris.'),
      answer('```json\n{"city":"Paris","celsius":21,"conditions":"sunny"}\n```'),
    );
    const { runtime } = runtimeWith(openai(), { output: weatherSchema });
    const result = await runtime.generate({ threadId: 'thread-2', input: 'Weather in Paris?' });

    expect(result.output).toEqual(weather);
    expect(result).toMatchObject({ status: 'done', termination: { type: 'natural-end' }, steps: 2 });
    expect(server.requests).toHaveLength(2);
    expect(bodies()[1]!.response_format).toEqual(responseFormat);
    expect(bodies()[1]!.messages).toEqual([
      { role: 'system', content: 'You report the weather.' },
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: 'It is 21°C and sunny in Paris.' },
      { role: 'user', content: expect.stringMatching(repairText) },
    ]);
  });

  it('ends with output-invalid after a second bad answer, without a third request', async () => {
    server.enqueue(
      answer('{"city":"Paris","celsius":21}'),
      answer('{"city":"Paris","celsius":21.5,"conditions":"sunny"}'),
    );
    const { runtime } = runtimeWith(openai(), { output: weatherSchema });
    const result = await runtime.generate({ threadId: 'thread-3', input: 'Weather in Paris?' });

    expect(result.output).toBeUndefined();
    expect(result.termination).toMatchObject({
      type: 'error',
      error: { code: 'output-invalid', message: expect.stringMatching(/after 1 repair round\): celsius: /) },
    });
    expect(server.requests).toHaveLength(2);
    for (const body of bodies()) expect(body.response_format).toEqual(responseFormat);
    expect((bodies()[1]!.messages as unknown[]).at(-1)).toEqual({
      role: 'user',
      content: expect.stringMatching(secondRepairText),
    });
  });
});

describe('AiSdkModel with @ai-sdk/openai: an output schema with optional fields', () => {
  it('goes non-strict with the providerOptions option, as OpenAI strict mode needs every property required', async () => {
    const role = chunk({ role: 'assistant', content: '', refusal: null });
    const usage: Usage = {
      inputTokens: 50,
      outputTokens: 10,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    };
    server.enqueue({
      status: 200,
      headers: openaiHeaders(),
      body: [
        role,
        chunk({ content: '{"city":"Paris","celsius":21}' }),
        chunk({}, 'stop'),
        usageChunk(usage),
        done,
      ],
    });
    const model = new AiSdkModel({
      model: createOpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1` }).chat('gpt-4.1-mini'),
      providerOptions: { openai: { strictJsonSchema: false } },
    });
    const runtime = createRuntime().model('main', model).agent({ id: 'assistant', model: 'main' }).build();
    const withNote = z.object({ city: z.string(), celsius: z.number(), note: z.string().optional() });
    const result = await runtime.generate({
      threadId: 'thread-8',
      input: 'Weather in Paris?',
      output: withNote,
    });

    expect(result.output).toEqual({ city: 'Paris', celsius: 21 });
    expect(bodies()[0]!.response_format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'output',
        strict: false,
        schema: {
          type: 'object',
          properties: { city: { type: 'string' }, celsius: { type: 'number' }, note: { type: 'string' } },
          required: ['city', 'celsius'],
          additionalProperties: false,
        },
      },
    });
  });
});

describe('AiSdkModel with @ai-sdk/anthropic and structured output in the agent loop', () => {
  const sse = (...events: string[]) => ({ status: 200, headers: streamHeaders(), body: events });
  const answer = (...pieces: string[]) =>
    sse(
      messageStart({ input_tokens: 220, output_tokens: 1 }),
      blockStart(0, { type: 'text', text: '' }),
      ping,
      ...pieces.map((text) => blockDelta(0, { type: 'text_delta', text })),
      blockStop(0),
      messageDelta('end_turn', { output_tokens: 24 }),
      messageStop,
    );
  const toolCall = sse(
    messageStart({ input_tokens: 200, output_tokens: 1 }),
    blockStart(0, { type: 'tool_use', id: 'toolu_01S', name: 'get_weather', input: {} }),
    blockDelta(0, { type: 'input_json_delta', partial_json: '' }),
    blockDelta(0, { type: 'input_json_delta', partial_json: '{"city": "Paris"}' }),
    blockStop(0),
    messageDelta('tool_use', { output_tokens: 40 }),
    messageStop,
  );
  const anthropic = (modelId = 'claude-sonnet-4-6') =>
    createAnthropic({ apiKey: 'sk-ant-test', baseURL: `${server.url}/v1` })(modelId);
  /** The AI SDK moves the constraints Anthropic rejects (here zod's safe-integer bounds) into descriptions. */
  const outputConfig = {
    format: {
      type: 'json_schema',
      schema: {
        type: 'object',
        properties: {
          city: { type: 'string' },
          celsius: {
            type: 'integer',
            description: 'minimum: -9007199254740991; maximum: 9007199254740991.',
          },
          conditions: { type: 'string', enum: ['sunny', 'cloudy', 'rain'] },
        },
        required: ['city', 'celsius', 'conditions'],
        additionalProperties: false,
      },
    },
  };

  it('calls a tool, then answers JSON: result.output is the typed object; every request sets output_config.format', async () => {
    server.enqueue(toolCall, answer('{"city": "Par', 'is", "celsius": 21, ', '"conditions": "sunny"}'));
    const { runtime, calls } = runtimeWith(anthropic());
    const result = await runtime.generate({
      threadId: 'thread-4',
      input: 'Weather in Paris?',
      output: weatherSchema,
    });

    expectTypeOf(result.output).toEqualTypeOf<
      { city: string; celsius: number; conditions: 'sunny' | 'cloudy' | 'rain' } | undefined
    >();
    expect(result.output).toEqual(weather);
    expect(result).toMatchObject({ status: 'done', termination: { type: 'natural-end' }, steps: 2 });
    expect(calls).toEqual(['Paris']);
    expect(server.requests.map((request) => request.path)).toEqual(['/v1/messages', '/v1/messages']);
    for (const body of bodies()) {
      expect(body.output_config).toEqual(outputConfig);
      expect(body.tools).toHaveLength(1);
    }
    expect((bodies()[1]!.messages as unknown[]).at(-1)).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_01S',
          content: '{"city":"Paris","tempC":21,"sky":"clear"}',
        },
      ],
    });
  });

  it('repairs a prose first answer: the model sees its answer and what was wrong, then answers JSON', async () => {
    server.enqueue(
      answer('It is 21°C and sunny in Paris.'),
      answer('```json\n{"city": "Paris", "celsius": 21, "conditions": "sunny"}\n```'),
    );
    const { runtime } = runtimeWith(anthropic(), { output: weatherSchema });
    const result = await runtime.generate({ threadId: 'thread-5', input: 'Weather in Paris?' });

    expect(result.output).toEqual(weather);
    expect(result).toMatchObject({ status: 'done', termination: { type: 'natural-end' }, steps: 2 });
    expect(server.requests).toHaveLength(2);
    expect(bodies()[1]!.output_config).toEqual(outputConfig);
    expect(bodies()[1]!.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'It is 21°C and sunny in Paris.' }] },
      { role: 'user', content: [{ type: 'text', text: expect.stringMatching(repairText) }] },
    ]);
  });

  it('ends with output-invalid after a second bad answer, without a third request', async () => {
    server.enqueue(
      answer('{"city": "Paris", "celsius": 21}'),
      answer('{"city": "Paris", "celsius": 21.5, "conditions": "sunny"}'),
    );
    const { runtime } = runtimeWith(anthropic(), { output: weatherSchema });
    const result = await runtime.generate({ threadId: 'thread-6', input: 'Weather in Paris?' });

    expect(result.output).toBeUndefined();
    expect(result.termination).toMatchObject({
      type: 'error',
      error: { code: 'output-invalid', message: expect.stringMatching(/after 1 repair round\): celsius: /) },
    });
    expect(server.requests).toHaveLength(2);
    for (const body of bodies()) expect(body.output_config).toEqual(outputConfig);
    expect((bodies()[1]!.messages as unknown[]).at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'text', text: expect.stringMatching(secondRepairText) }],
    });
  });

  it("on a model without native structured outputs, gets the object through the AI SDK's json tool, repaired once", async () => {
    const jsonToolCall = (id: string, json: string) =>
      sse(
        messageStart({ input_tokens: 240, output_tokens: 1 }),
        blockStart(0, { type: 'tool_use', id, name: 'json', input: {} }),
        blockDelta(0, { type: 'input_json_delta', partial_json: '' }),
        blockDelta(0, { type: 'input_json_delta', partial_json: json }),
        blockStop(0),
        messageDelta('tool_use', { output_tokens: 30 }),
        messageStop,
      );
    server.enqueue(
      toolCall,
      jsonToolCall('toolu_01J', '{"city": "Paris", "celsius": 21}'),
      jsonToolCall('toolu_02J', '{"city": "Paris", "celsius": 21, "conditions": "sunny"}'),
    );
    const { runtime, calls } = runtimeWith(anthropic('claude-sonnet-4-20250514'), { output: weatherSchema });
    const result = await runtime.generate({ threadId: 'thread-7', input: 'Weather in Paris?' });

    expect(result.output).toEqual(weather);
    expect(result).toMatchObject({ status: 'done', termination: { type: 'natural-end' }, steps: 3 });
    expect(calls).toEqual(['Paris']);
    expect(server.requests).toHaveLength(3);
    for (const body of bodies()) {
      expect(body).not.toHaveProperty('output_config');
      expect((body.tools as Array<{ name: string }>).map((tool) => tool.name)).toEqual([
        'get_weather',
        'json',
      ]);
      expect(body.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    }
    expect((bodies()[2]!.messages as unknown[]).slice(-2)).toEqual([
      { role: 'assistant', content: [{ type: 'text', text: '{"city": "Paris", "celsius": 21}' }] },
      {
        role: 'user',
        content: [{ type: 'text', text: expect.stringMatching(/^Your answer is not valid: conditions: /) }],
      },
    ]);
  });
});
