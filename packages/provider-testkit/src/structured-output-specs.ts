import type { JsonObject, Message, ModelRequest, ResponseFormat } from '@lunation/contract';
import { expect, it } from 'vitest';
import { assertStreamInvariants, type CollectedStream, summarizeParts } from './collect-stream.js';
import type { ScriptedResponse, WireCapabilities } from './provider-wire.js';
import type { ScriptedServer } from './scripted-server.js';

/**
 * How an adapter carries `ModelRequest.responseFormat`. Given to `runProviderConformance`, it runs the
 * structured-output specs: the kit asks for {@link structuredOutputSchema} (and a list of it, wrapped as the
 * runtime wraps a non-object root), named `output` as the runtime names it, and checks the request body and the
 * streamed answer.
 */
export interface StructuredOutputConformance {
  /**
   * {@link structuredOutputSchema} as the vendor receives it from this adapter (e.g. without the integer bounds a
   * vendor rejects). The suite expects the list schema's items to be sent the same way.
   */
  sentSchema: JsonObject;
  /**
   * The top-level request body fields that carry a response format whose schema the adapter sent as `schema`,
   * e.g. `(schema) => ({ response_format: { type: 'json_schema', json_schema: { name: 'output', schema, strict: true } } })`.
   * Each field is compared whole (`toEqual`), so a dropped, renamed or altered schema fails.
   */
  requestFields: (schema: JsonObject) => JsonObject;
}

/**
 * The answer schema of the structured-output specs, as the runtime sends zod's
 * `z.object({ city: z.string(), celsius: z.number().int(), conditions: z.enum([...]) })`.
 */
export const structuredOutputSchema = {
  type: 'object',
  properties: {
    city: { type: 'string' },
    celsius: { type: 'integer', minimum: -9_007_199_254_740_991, maximum: 9_007_199_254_740_991 },
    conditions: { type: 'string', enum: ['sunny', 'cloudy', 'rain'] },
  },
  required: ['city', 'celsius', 'conditions'],
  additionalProperties: false,
} satisfies JsonObject;

/** A list answer's schema, wrapped in an object as the runtime asks for non-object roots. */
function listOf(items: JsonObject): JsonObject {
  return {
    type: 'object',
    properties: { value: { type: 'array', items } },
    required: ['value'],
    additionalProperties: false,
  };
}

const weather = { city: 'Paris', celsius: 21, conditions: 'sunny' };

/** What the structured-output specs need from the suite around them. */
export interface StructuredOutputSpecContext {
  server: ScriptedServer;
  capabilities: WireCapabilities;
  conformance: StructuredOutputConformance;
  /** Scripts the responses and streams `request` through the adapter. */
  run: (responses: ScriptedResponse[], request: ModelRequest) => Promise<CollectedStream>;
}

/** Registers the structured-output specs in the current `describe` block. */
export function structuredOutputSpecs(context: StructuredOutputSpecContext): void {
  const { server, capabilities, conformance, run } = context;
  const tool = {
    name: 'get_weather',
    description: 'The current weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  };
  // Named as the runtime names an agent's output schema.
  const objectFormat: ResponseFormat = { type: 'json', name: 'output', schema: structuredOutputSchema };
  const question: Message[] = [
    { id: 'so-1', role: 'system', content: [{ type: 'text', text: 'You report the weather.' }] },
    { id: 'so-2', role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
  ];
  const request = (messages: Message[], responseFormat = objectFormat): ModelRequest => ({
    messages,
    tools: [tool],
    responseFormat,
  });
  const answer = (...pieces: string[]): ScriptedResponse => ({
    type: 'stream',
    events: pieces.map((text) => ({ type: 'text', text })),
  });
  /** Every request carried the format's fields as the adapter sends `sentSchema`, and the tool. */
  const expectFormatSent = (sentSchema: JsonObject) => {
    expect(server.requests.length).toBeGreaterThan(0);
    for (const recorded of server.requests) {
      const body = recorded.body as Record<string, unknown>;
      for (const [field, value] of Object.entries(conformance.requestFields(sentSchema))) {
        expect(body[field], `request body field "${field}"`).toEqual(value);
      }
      expect(body.tools, 'request body field "tools"').toHaveLength(1);
    }
  };
  /** The answer streamed as text, exactly as the model wrote it, ending the turn. */
  const expectAnswer = ({ parts, error }: CollectedStream, text: string) => {
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    const summary = summarizeParts(parts);
    expect(summary.text).toBe(text);
    expect(summary.stopReason).toBe('end-turn');
  };

  it('asks for the format with the tools, streams a tool call, then the JSON answer after the tool result', async () => {
    const called = await run(
      [
        {
          type: 'stream',
          events: [
            { type: 'tool-call-start', toolCallId: 'call_W1', toolName: 'get_weather' },
            { type: 'tool-call-delta', toolCallId: 'call_W1', argumentsDelta: '{"city":"Paris"}' },
          ],
        },
      ],
      request(question),
    );
    expect(called.error).toBeUndefined();
    const summary = summarizeParts(called.parts);
    expect(summary.toolCalls.map(({ toolCallId, toolName }) => ({ toolCallId, toolName }))).toEqual([
      { toolCallId: 'call_W1', toolName: 'get_weather' },
    ]);
    expect(summary.stopReason).toBe('tool-use');

    const pieces = ['{"city":"Par', 'is","celsius":21,', '"conditions":"sunny"}'];
    const answered = await run(
      [answer(...pieces)],
      request([
        ...question,
        {
          id: 'so-3',
          role: 'assistant',
          content: [
            {
              type: 'tool-call',
              toolCallId: 'call_W1',
              toolName: 'get_weather',
              arguments: '{"city":"Paris"}',
            },
          ],
        },
        {
          id: 'so-4',
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'call_W1',
              toolName: 'get_weather',
              result: { status: 'success', data: { city: 'Paris', tempC: 21, sky: 'clear' } },
            },
          ],
        },
      ]),
    );
    expectAnswer(answered, pieces.join(''));
    expect(JSON.parse(summarizeParts(answered.parts).text)).toEqual(weather);
    expect(server.requests).toHaveLength(2);
    expectFormatSent(conformance.sentSchema);
  });

  it('asks for the format again on a repair turn (the prose answer, then the correction) and streams the answer as written', async () => {
    const fenced = '```json\n{"city":"Paris","celsius":21,"conditions":"sunny"}\n```';
    const result = await run(
      [answer(fenced)],
      request([
        ...question,
        {
          id: 'so-3',
          role: 'assistant',
          content: [{ type: 'text', text: 'It is 21°C and sunny in Paris.' }],
        },
        {
          id: 'so-4',
          role: 'user',
          content: [
            {
              type: 'text',
              text: 'Your answer is not valid: the answer is not JSON (Unexpected token). Answer again with only a JSON value that matches the required schema, and no other text.',
            },
          ],
        },
      ]),
    );
    expectAnswer(result, fenced);
    expect(server.requests).toHaveLength(1);
    expectFormatSent(conformance.sentSchema);
  });

  it('streams an answer that breaks the schema unchanged, leaving validation to the runtime', async () => {
    const invalid = '{"city":"Paris","celsius":21.5,"conditions":"sunny"}';
    const result = await run(
      [answer('{"city":"Paris",', '"celsius":21.5,"conditions":"sunny"}')],
      request(question),
    );
    expectAnswer(result, invalid);
    expectFormatSent(conformance.sentSchema);
  });

  it('asks for a list answer wrapped in an object ({ value: [...] }), its items sent as any schema', async () => {
    const list = '{"value":[{"city":"Paris","celsius":21,"conditions":"sunny"}]}';
    const result = await run(
      [answer(list)],
      request(question, { ...objectFormat, schema: listOf(structuredOutputSchema) }),
    );
    expectAnswer(result, list);
    expectFormatSent(listOf(conformance.sentSchema));
  });

  it.skipIf(!capabilities.refusal)(
    'streams a refusal as refusal deltas and stop reason "refusal" [needs capabilities.refusal]',
    async () => {
      const { parts, error } = await run(
        [
          {
            type: 'stream',
            events: [
              { type: 'refusal', text: "I'm sorry, " },
              { type: 'refusal', text: 'I cannot help with that.' },
            ],
          },
        ],
        request(question),
      );
      expect(error).toBeUndefined();
      assertStreamInvariants(parts);
      const refusal = parts.flatMap((part) => (part.type === 'refusal-delta' ? [part.delta] : []));
      expect(refusal.join('')).toBe("I'm sorry, I cannot help with that.");
      const summary = summarizeParts(parts);
      expect(summary.text).toBe('');
      expect(summary.stopReason).toBe('refusal');
      expectFormatSent(conformance.sentSchema);
    },
  );
}
