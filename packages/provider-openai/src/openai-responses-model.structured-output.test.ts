import type { Usage } from '@lunation/contract';
import { structuredOutputSchema, useScriptedServer } from '@lunation/provider-testkit';
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
const textFormat = { type: 'json_schema', name: 'output', schema: structuredOutputSchema, strict: true };
/** OpenAI echoes the request's `text` settings in every `response` object of the stream. */
const writer = () =>
  new ResponsesStreamWriter({ text: { format: { ...textFormat, description: null }, verbosity: 'medium' } });

function runtimeWith() {
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
    })
    .build();
  return { runtime, calls };
}

type Body = { input: unknown[]; text?: unknown; tools?: unknown[] };
const bodies = () => server.requests.map((request) => request.body as Body);

// What every adapter does with a response format (format on every request, repair turns, list answers,
// refusals) is in the conformance suite (openai-responses-model.conformance.test.ts); here, what only the
// Responses API adds in the agent loop: the reasoning item, with its encrypted content, goes back with the call.
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
      responsesSse(
        writer()
          .created()
          .message('msg_S2', ['{"city":"Par', 'is","celsius":21,', '"conditions":"sunny"}'])
          .completed(usage),
      ),
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
});
