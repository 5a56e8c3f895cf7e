import type { Usage } from '@lunation/contract';
import { useScriptedServer } from '@lunation/provider-testkit';
import { createRuntime, defineTool } from '@lunation/runtime';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { ResponsesStreamWriter, responsesSse } from './__fixtures__/openai-responses-wire.js';
import { OpenAIResponsesModel } from './openai-responses-model.js';

const server = useScriptedServer();

const usage: Usage = {
  inputTokens: 120,
  outputTokens: 40,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 16,
};

const weatherSchema = z.object({
  city: z.string(),
  celsius: z.number().int(),
  conditions: z.enum(['sunny', 'cloudy', 'rain']),
});
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
const textFormat = { type: 'json_schema', name: 'output', schema: wireSchema, strict: true };
/** OpenAI echoes the request's `text` settings in every `response` object of the stream. */
const writer = () =>
  new ResponsesStreamWriter({ text: { format: { ...textFormat, description: null }, verbosity: 'medium' } });
const answer = (id: string, ...pieces: string[]) =>
  responsesSse(writer().created().message(id, pieces).completed(usage));

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
  const model = new OpenAIResponsesModel({
    model: 'gpt-5-mini',
    apiKey: 'sk-test',
    baseURL: `${server.url}/v1`,
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

type Body = { input: unknown[]; text?: unknown; tools?: unknown[] };
const bodies = () => server.requests.map((request) => request.body as Body);

describe('OpenAIResponsesModel with structured output in the agent loop', () => {
  it('reasons, calls a tool, then answers JSON: result.output is the typed object; every request sets text.format', async () => {
    server.enqueue(
      responsesSse(
        writer()
          .created()
          .reasoning('rs_S1', [['Look the weather up first.']], 'gAAAAB-rs_S1-encrypted')
          .call('fc_S1', 'call_W1', 'get_weather', ['{"city":', '"Paris"}'])
          .completed(usage),
      ),
      answer('msg_S2', '{"city":"Par', 'is","celsius":21,', '"conditions":"sunny"}'),
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
    expect(server.requests.map((request) => request.path)).toEqual(['/v1/responses', '/v1/responses']);
    for (const body of bodies()) {
      expect(body.text).toEqual({ format: textFormat });
      expect(body.tools).toHaveLength(1);
    }
    expect(bodies()[1]!.input.slice(2)).toEqual([
      {
        type: 'reasoning',
        id: 'rs_S1',
        summary: [{ type: 'summary_text', text: 'Look the weather up first.' }],
        encrypted_content: 'gAAAAB-rs_S1-encrypted',
      },
      {
        type: 'function_call',
        call_id: 'call_W1',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
        id: 'fc_S1',
      },
      {
        type: 'function_call_output',
        call_id: 'call_W1',
        output: '{"city":"Paris","tempC":21,"sky":"clear"}',
      },
    ]);
  });

  it('repairs a prose first answer: the model sees its answer and what was wrong, then answers JSON', async () => {
    server.enqueue(
      answer('msg_R1', 'It is 21°C and sunny in Paris.'),
      answer('msg_R2', '```json\n{"city":"Paris","celsius":21,"conditions":"sunny"}\n```'),
    );
    const { runtime } = runtimeWith({ output: weatherSchema });
    const result = await runtime.generate({ threadId: 'thread-2', input: 'Weather in Paris?' });

    expect(result.output).toEqual({ city: 'Paris', celsius: 21, conditions: 'sunny' });
    expect(result).toMatchObject({ status: 'done', termination: { type: 'natural-end' }, steps: 2 });
    expect(server.requests).toHaveLength(2);
    const second = bodies()[1]!;
    expect(second.text).toEqual({ format: textFormat });
    expect(second.input).toEqual([
      { role: 'system', content: 'You report the weather.' },
      { role: 'user', content: 'Weather in Paris?' },
      {
        type: 'message',
        role: 'assistant',
        id: 'msg_R1',
        status: 'completed',
        content: [{ type: 'output_text', text: 'It is 21°C and sunny in Paris.', annotations: [] }],
      },
      {
        role: 'user',
        content: expect.stringMatching(
          /^Your answer is not valid: the answer is not JSON \(.+\)\. Answer again/,
        ),
      },
    ]);
  });

  it('ends with output-invalid after a second bad answer, without a third request', async () => {
    server.enqueue(
      answer('msg_B1', '{"city":"Paris","celsius":21}'),
      answer('msg_B2', '{"city":"Paris","celsius":21.5,"conditions":"sunny"}'),
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
    for (const body of bodies()) expect(body.text).toEqual({ format: textFormat });
    expect(bodies()[1]!.input.at(-1)).toEqual({
      role: 'user',
      content: expect.stringMatching(/^Your answer is not valid: conditions: /),
    });
  });

  it('ends with output-invalid at once when the model refuses the structured answer', async () => {
    server.enqueue(
      responsesSse(
        writer().created().refusal('msg_X1', ["I'm sorry, ", 'I cannot help with that.']).completed(usage),
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
