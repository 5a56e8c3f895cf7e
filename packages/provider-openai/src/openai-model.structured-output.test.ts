import { useScriptedServer } from '@lunation/provider-testkit';
import { chunk, done, streamHeaders, usageChunk } from '@lunation/provider-testkit/wires/openai-chat';
import { createRuntime, defineTool } from '@lunation/runtime';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { OpenAIModel } from './openai-model.js';

const server = useScriptedServer();

const usage = {
  inputTokens: 90,
  outputTokens: 12,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};
const sse = (...events: string[]) => ({ status: 200, headers: streamHeaders(), body: events });
const role = chunk({ role: 'assistant', content: '', refusal: null });
/** An answer whose text arrives in `pieces`. */
const answer = (...pieces: string[]) =>
  sse(role, ...pieces.map((content) => chunk({ content })), chunk({}, 'stop'), usageChunk(usage), done);

const weatherSchema = z.object({
  city: z.string(),
  celsius: z.number().int(),
  conditions: z.enum(['sunny', 'cloudy', 'rain']),
});
/** The schema as it goes over the wire: closed and all properties required, so strict mode is on. */
const wireSchema = {
  type: 'object',
  properties: {
    city: { type: 'string' },
    celsius: { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 },
    conditions: { type: 'string', enum: ['sunny', 'cloudy', 'rain'] },
  },
  required: ['city', 'celsius', 'conditions'],
  additionalProperties: false,
};
const responseFormat = {
  type: 'json_schema',
  json_schema: { name: 'output', schema: wireSchema, strict: true },
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
  const model = new OpenAIModel({ model: 'gpt-4.1-mini', apiKey: 'sk-test', baseURL: `${server.url}/v1` });
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
  response_format?: unknown;
  tools?: unknown[];
};
const bodies = () => server.requests.map((request) => request.body as Body);

describe('OpenAIModel (Chat Completions) with structured output in the agent loop', () => {
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
    expect(server.requests.map((request) => request.path)).toEqual([
      '/v1/chat/completions',
      '/v1/chat/completions',
    ]);
    for (const body of bodies()) {
      expect(body.response_format).toEqual(responseFormat);
      expect(body.tools).toHaveLength(1);
    }
    expect(bodies()[1]!.messages.at(-1)).toEqual({
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
    const { runtime } = runtimeWith({ output: weatherSchema });
    const result = await runtime.generate({ threadId: 'thread-2', input: 'Weather in Paris?' });

    expect(result.output).toEqual({ city: 'Paris', celsius: 21, conditions: 'sunny' });
    expect(result).toMatchObject({ status: 'done', termination: { type: 'natural-end' }, steps: 2 });
    expect(server.requests).toHaveLength(2);
    const second = bodies()[1]!;
    expect(second.response_format).toEqual(responseFormat);
    expect(second.messages.slice(0, 3)).toEqual([
      { role: 'system', content: 'You report the weather.' },
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: 'It is 21°C and sunny in Paris.' },
    ]);
    expect(second.messages).toHaveLength(4);
    expect(second.messages[3]).toEqual({
      role: 'user',
      content: expect.stringMatching(
        /^Your answer is not valid: the answer is not JSON \(.+\)\. Answer again/,
      ),
    });
  });

  it('ends with output-invalid after a second bad answer, without a third request', async () => {
    server.enqueue(
      answer('{"city":"Paris","celsius":21}'),
      answer('{"city":"Paris","celsius":21.5,"conditions":"sunny"}'),
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
    for (const body of bodies()) expect(body.response_format).toEqual(responseFormat);
    expect(bodies()[1]!.messages.at(-1)).toEqual({
      role: 'user',
      content: expect.stringMatching(/^Your answer is not valid: conditions: /),
    });
  });

  it('asks for a list output wrapped in an object, since OpenAI takes only object roots, and returns the list', async () => {
    server.enqueue(answer('{"value":[{"city":"Paris","celsius":21,"conditions":"sunny"}]}'));
    const { runtime } = runtimeWith();
    const result = await runtime.generate({
      threadId: 'thread-5',
      input: 'Weather in Paris?',
      output: z.array(weatherSchema),
    });

    expect(result.output).toEqual([{ city: 'Paris', celsius: 21, conditions: 'sunny' }]);
    expect(bodies()[0]!.response_format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'output',
        strict: true,
        schema: {
          type: 'object',
          properties: { value: { type: 'array', items: wireSchema } },
          required: ['value'],
          additionalProperties: false,
        },
      },
    });
  });

  it('ends with output-invalid at once when the model refuses the structured answer', async () => {
    server.enqueue(
      sse(
        role,
        chunk({ refusal: "I'm sorry, " }),
        chunk({ refusal: 'I cannot help with that.' }),
        chunk({}, 'stop'),
        usageChunk(usage),
        done,
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
