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
  streamHeaders,
} from '@lunation/provider-testkit/wires/anthropic-messages';
import {
  chunk,
  done,
  streamHeaders as openaiHeaders,
  usageChunk,
} from '@lunation/provider-testkit/wires/openai-chat';
import { createRuntime, defineTool } from '@lunation/runtime';
import { describe, expect, it } from 'vitest';
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

// What every adapter does with a response format (format on every request, tool calls, repair turns, list
// answers) is in the conformance suite, over both SDKs (ai-sdk-model.conformance.test.ts); here, what only the
// AI SDK adds: its provider options, and the json tool of models without native structured outputs.
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

describe('AiSdkModel with @ai-sdk/anthropic: a model without native structured outputs', () => {
  const sse = (...events: string[]) => ({ status: 200, headers: streamHeaders(), body: events });
  const toolCall = sse(
    messageStart({ input_tokens: 200, output_tokens: 1 }),
    blockStart(0, { type: 'tool_use', id: 'toolu_01S', name: 'get_weather', input: {} }),
    blockDelta(0, { type: 'input_json_delta', partial_json: '' }),
    blockDelta(0, { type: 'input_json_delta', partial_json: '{"city": "Paris"}' }),
    blockStop(0),
    messageDelta('tool_use', { output_tokens: 40 }),
    messageStop,
  );
  const anthropic = (modelId: string) =>
    createAnthropic({ apiKey: 'sk-ant-test', baseURL: `${server.url}/v1` })(modelId);

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
