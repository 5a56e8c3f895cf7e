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
import { createRuntime, defineTool } from '@lunation/runtime';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { refusalStream } from './__fixtures__/anthropic-recorded.js';
import { AnthropicModel } from './anthropic-model.js';

const server = useScriptedServer();

const sse = (...events: string[]) => ({ status: 200, headers: streamHeaders(), body: events });
/** An answer whose text arrives in `pieces`. */
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

const weatherSchema = z.object({
  city: z.string(),
  celsius: z.number().int(),
  conditions: z.enum(['sunny', 'cloudy', 'rain']),
});
/**
 * The schema as Anthropic accepts it: `z.number().int()` becomes `minimum`/`maximum` (the safe-integer range)
 * in JSON Schema, which `output_config.format` rejects with a 400 ("For 'integer' type, property 'minimum'
 * is not supported"), so the adapter leaves those bounds out.
 */
const outputConfig = {
  format: {
    type: 'json_schema',
    schema: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        celsius: { type: 'integer' },
        conditions: { type: 'string', enum: ['sunny', 'cloudy', 'rain'] },
      },
      required: ['city', 'celsius', 'conditions'],
      additionalProperties: false,
    },
  },
};

function runtimeWith(agent: { output?: z.ZodType } = {}) {
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
  const model = new AnthropicModel({
    model: 'claude-sonnet-4-6',
    apiKey: 'sk-ant-test',
    baseURL: server.url,
  });
  const runtime = createRuntime()
    .model('main', model)
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

type Body = {
  messages: Array<{ role: string; content: unknown }>;
  output_config?: unknown;
  tools?: unknown[];
};
const bodies = () => server.requests.map((request) => request.body as Body);

describe('AnthropicModel with structured output in the agent loop', () => {
  it('calls a tool, then answers JSON: result.output is the typed object; every request sets output_config.format', async () => {
    server.enqueue(
      sse(
        messageStart({ input_tokens: 200, output_tokens: 1 }),
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'Let me look that up.' }),
        blockStop(0),
        blockStart(1, { type: 'tool_use', id: 'toolu_01S', name: 'get_weather', input: {} }),
        blockDelta(1, { type: 'input_json_delta', partial_json: '' }),
        blockDelta(1, { type: 'input_json_delta', partial_json: '{"city": "Paris"}' }),
        blockStop(1),
        messageDelta('tool_use', { output_tokens: 40 }),
        messageStop,
      ),
      answer('{"city": "Par', 'is", "celsius": 21, ', '"conditions": "sunny"}'),
    );
    const { runtime, calls } = runtimeWith();
    const result = await runtime.generate({
      threadId: 'thread-1',
      input: 'Weather in Paris?',
      output: weatherSchema,
    });

    expectTypeOf(result.output).toEqualTypeOf<
      { city: string; celsius: number; conditions: 'sunny' | 'cloudy' | 'rain' } | undefined
    >();
    expect(result.output).toEqual({ city: 'Paris', celsius: 21, conditions: 'sunny' });
    expect(result).toMatchObject({ status: 'done', termination: { type: 'natural-end' }, steps: 2 });
    expect(calls).toEqual(['Paris']);
    expect(server.requests.map((request) => request.path)).toEqual(['/v1/messages', '/v1/messages']);
    for (const body of bodies()) {
      expect(body.output_config).toEqual(outputConfig);
      expect(body.tools).toHaveLength(1);
    }
    expect(bodies()[1]!.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me look that up.' },
          { type: 'tool_use', id: 'toolu_01S', name: 'get_weather', input: { city: 'Paris' } },
        ],
      },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_01S',
            content: '{"city":"Paris","tempC":21,"sky":"clear"}',
          },
        ],
      },
    ]);
  });

  it('repairs a prose first answer: the model sees its answer and what was wrong, then answers JSON', async () => {
    server.enqueue(
      answer('It is 21°C and sunny in Paris.'),
      answer('```json\n{"city": "Paris", "celsius": 21, "conditions": "sunny"}\n```'),
    );
    const { runtime } = runtimeWith({ output: weatherSchema });
    const result = await runtime.generate({ threadId: 'thread-2', input: 'Weather in Paris?' });

    expect(result.output).toEqual({ city: 'Paris', celsius: 21, conditions: 'sunny' });
    expect(result).toMatchObject({ status: 'done', termination: { type: 'natural-end' }, steps: 2 });
    expect(server.requests).toHaveLength(2);
    const second = bodies()[1]!;
    expect(second.output_config).toEqual(outputConfig);
    expect(second.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'It is 21°C and sunny in Paris.' }] },
      {
        role: 'user',
        content: [
          {
            type: 'text',
            text: expect.stringMatching(
              /^Your answer is not valid: the answer is not JSON \(.+\)\. Answer again/,
            ),
          },
        ],
      },
    ]);
  });

  it('ends with output-invalid after a second bad answer, without a third request', async () => {
    server.enqueue(
      answer('{"city": "Paris", "celsius": 21}'),
      answer('{"city": "Paris", "celsius": 21.5, "conditions": "sunny"}'),
    );
    const { runtime } = runtimeWith({ output: weatherSchema });
    const result = await runtime.generate({ threadId: 'thread-3', input: 'Weather in Paris?' });

    expect(result.output).toBeUndefined();
    expect(result.termination).toMatchObject({
      type: 'error',
      error: {
        code: 'output-invalid',
        message: expect.stringMatching(/after 1 repair round\): celsius: /),
      },
    });
    expect(server.requests).toHaveLength(2);
    for (const body of bodies()) expect(body.output_config).toEqual(outputConfig);
    expect(bodies()[1]!.messages.at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'text', text: expect.stringMatching(/^Your answer is not valid: conditions: /) }],
    });
  });

  it('asks for a list output wrapped in an object, since Anthropic takes only object roots, and returns the list', async () => {
    server.enqueue(answer('{"value": [{"city": "Paris", "celsius": 21, "conditions": "sunny"}]}'));
    const { runtime } = runtimeWith();
    const result = await runtime.generate({
      threadId: 'thread-5',
      input: 'Weather in Paris?',
      output: z.array(weatherSchema),
    });

    expect(result.output).toEqual([{ city: 'Paris', celsius: 21, conditions: 'sunny' }]);
    expect(bodies()[0]!.output_config).toEqual({
      format: {
        type: 'json_schema',
        schema: {
          type: 'object',
          properties: { value: { type: 'array', items: outputConfig.format.schema } },
          required: ['value'],
          additionalProperties: false,
        },
      },
    });
  });

  it('ends with output-invalid at once when Claude refuses (stop_reason refusal)', async () => {
    server.enqueue(
      sse(
        ...refusalStream({
          type: 'refusal',
          category: 'cyber',
          explanation: "This request triggered restrictions under Anthropic's Usage Policy.",
        }),
      ),
    );
    const { runtime } = runtimeWith({ output: weatherSchema });
    const result = await runtime.generate({ threadId: 'thread-4', input: 'Weather in Paris?' });

    expect(result.termination).toMatchObject({
      type: 'error',
      error: { code: 'output-invalid', message: expect.stringMatching(/the model refused to answer/) },
    });
    expect(server.requests).toHaveLength(1);
  });
});
