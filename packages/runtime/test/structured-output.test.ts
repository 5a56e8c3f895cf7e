import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { createRuntime, defineTool, permissionPlugin } from '../src/index.js';
import { callTool, reply, ScriptedModel } from '../src/testing/index.js';

const weather = z.object({ city: z.string(), celsius: z.number() });

function runtimeFor(model: ScriptedModel, agent: { output?: z.ZodType; outputRepairs?: number } = {}) {
  const lookup = defineTool({
    name: 'lookup',
    description: 'Looks the weather up',
    input: z.object({ city: z.string() }),
    execute: ({ city }) => ({ city, celsius: 21 }),
  });
  return createRuntime()
    .model('m', model)
    .agent({
      id: 'a',
      model: 'm',
      tools: [lookup],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'lookup', decision: 'ask' }] } }],
      ...agent,
    })
    .build();
}

describe('structured output', () => {
  it('ends with a typed, validated object and asks the provider for JSON', async () => {
    const model = new ScriptedModel([reply('{"city":"Oslo","celsius":4}')]);
    const runtime = runtimeFor(model);
    const result = await runtime.generate({ threadId: 't', input: 'weather in Oslo?', output: weather });
    expectTypeOf(result.output).toEqualTypeOf<{ city: string; celsius: number } | undefined>();
    expect(result.output).toEqual({ city: 'Oslo', celsius: 4 });
    expect(result.termination).toEqual({ type: 'natural-end' });
    expect(model.requests[0]?.responseFormat).toMatchObject({
      type: 'json',
      name: 'output',
      schema: { type: 'object', required: ['city', 'celsius'] },
    });
  });

  it('repairs a bad first answer once, showing the model what was wrong', async () => {
    const model = new ScriptedModel([
      reply('It is 4 degrees in Oslo.'),
      reply('```json\n{"city":"Oslo","celsius":4}\n```'),
    ]);
    const result = await runtimeFor(model, { output: weather }).generate({
      threadId: 't',
      input: 'weather?',
    });
    expect(result.output).toEqual({ city: 'Oslo', celsius: 4 });
    const repair = model.requests[1]?.messages.at(-1);
    expect(repair).toMatchObject({ role: 'user', metadata: { visibility: 'internal', outputRepair: true } });
    expect(JSON.stringify(repair?.content)).toMatch(/not JSON/);
  });

  it('fails with output-invalid when the repaired answer is still wrong', async () => {
    const model = new ScriptedModel([reply('{"city":"Oslo"}'), reply('{"city":"Oslo","celsius":"cold"}')]);
    const result = await runtimeFor(model, { output: weather }).generate({
      threadId: 't',
      input: 'weather?',
    });
    expect(result.output).toBeUndefined();
    expect(result.termination).toMatchObject({
      type: 'error',
      error: { code: 'output-invalid', message: expect.stringMatching(/after 1 repair round\): celsius/) },
    });
    expect(model.callCount).toBe(2);
  });

  it('works with tools and through a suspension: the resumed run still ends with the object', async () => {
    const model = new ScriptedModel([
      callTool('lookup', { city: 'Oslo' }),
      reply('{"city":"Oslo","celsius":21}'),
    ]);
    const runtime = runtimeFor(model, { output: weather });
    const suspended = await runtime.generate({ threadId: 't', input: 'weather?' });
    expect(suspended.status).toBe('waiting');
    const outcome = await runtime.sendDecisions('t', [
      { decisionId: 'd1', ticketId: suspended.openTickets[0]?.id ?? '', action: 'resume' },
    ]);
    const done = await outcome.run?.result;
    expect(done?.output).toEqual({ city: 'Oslo', celsius: 21 });
    expect(model.requests.every((request) => request.responseFormat?.type === 'json')).toBe(true);
  });

  it('asks for a non-object output wrapped as { value }, since OpenAI and Anthropic take only object roots', async () => {
    const tags = z.array(z.string()).min(1);
    const model = new ScriptedModel([reply('{"value":["rain","wind"]}'), reply('["sun"]')]);
    const runtime = runtimeFor(model);
    const wrapped = await runtime.generate({ threadId: 't1', input: 'tags?', output: tags });
    expectTypeOf(wrapped.output).toEqualTypeOf<string[] | undefined>();
    expect(wrapped.output).toEqual(['rain', 'wind']);
    expect(model.callCount).toBe(1);
    expect(model.requests[0]?.responseFormat).toEqual({
      type: 'json',
      name: 'output',
      schema: {
        type: 'object',
        properties: { value: { type: 'array', items: { type: 'string' }, minItems: 1 } },
        required: ['value'],
        additionalProperties: false,
      },
    });
    // A model without a native JSON mode may answer the bare value: that is accepted too.
    const bare = await runtime.generate({ threadId: 't2', input: 'tags?', output: tags });
    expect(bare.output).toEqual(['sun']);
  });

  it('keeps $defs at the root of a wrapped schema so that references still resolve', async () => {
    const point = z.object({ x: z.number() });
    const model = new ScriptedModel([reply('{"value":[{"x":1},{"x":2}]}')]);
    const result = await runtimeFor(model).generate({
      threadId: 't',
      input: 'points?',
      output: z.array(point.meta({ id: 'point' })),
    });
    expect(result.output).toEqual([{ x: 1 }, { x: 2 }]);
    const schema = model.requests[0]?.responseFormat?.schema as Record<string, unknown>;
    expect(schema.properties).toEqual({ value: { type: 'array', items: { $ref: '#/definitions/point' } } });
    expect(schema.definitions).toEqual({
      point: {
        type: 'object',
        properties: { x: { type: 'number' } },
        required: ['x'],
        additionalProperties: false,
      },
    });
  });

  it('treats a refusal as output-invalid without a repair round', async () => {
    const model = new ScriptedModel([reply('', { stopReason: 'refusal' })]);
    const result = await runtimeFor(model, { output: weather }).generate({
      threadId: 't',
      input: 'weather?',
    });
    expect(result.termination).toMatchObject({ type: 'error', error: { code: 'output-invalid' } });
    expect(model.callCount).toBe(1);
  });
});
