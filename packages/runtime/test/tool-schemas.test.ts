import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../src/index.js';
import { jsonSchemaValidator, toJsonSchema } from '../src/tool.js';

const amount = z.object({ amount: z.number(), note: z.string().optional() });
const define = (name: string) =>
  defineTool({ name, description: `${name} an amount`, input: amount, execute: () => null });

describe('tools defined again with one zod schema (its JSON Schema derived once)', () => {
  it('each get the whole JSON Schema, as a copy of their own', () => {
    const first = define('charge');
    const second = define('refund');
    expect(first.descriptor.parameters).toEqual({
      type: 'object',
      properties: { amount: { type: 'number' }, note: { type: 'string' } },
      required: ['amount'],
    });
    expect(second.descriptor.parameters).toEqual(first.descriptor.parameters);
    (first.descriptor.parameters as { properties: Record<string, unknown> }).properties.amount = 'changed';
    expect(second.descriptor.parameters.properties).toEqual({
      amount: { type: 'number' },
      note: { type: 'string' },
    });
    expect(define('notify').descriptor.parameters.properties).toEqual({
      amount: { type: 'number' },
      note: { type: 'string' },
    });
  });

  it('a response schema converted twice gives two equal objects', () => {
    const schema = z.object({ always: z.boolean() });
    const first = toJsonSchema(schema);
    const second = toJsonSchema(schema);
    expect(second).toEqual(first);
    expect(second).not.toBe(first);
    expect(first.$schema).toBeUndefined();
  });
});

describe('jsonSchemaValidator', () => {
  it('makes one validator per distinct JSON Schema and checks values with it', () => {
    const schema = () => ({
      type: 'object',
      properties: { always: { type: 'boolean' } },
      required: ['always'],
    });
    const validator = jsonSchemaValidator(schema());
    expect(jsonSchemaValidator(schema())).toBe(validator);
    expect(validator.safeParse({ always: true }).success).toBe(true);
    expect(validator.safeParse({ always: 'yes' }).success).toBe(false);
    const other = jsonSchemaValidator({ type: 'object', properties: { always: { type: 'string' } } });
    expect(other).not.toBe(validator);
    expect(other.safeParse({ always: 'yes' }).success).toBe(true);
  });
});
