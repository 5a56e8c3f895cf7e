import { type JsonSchema, type JsonValue, LunationError, type ResponseFormat } from '@lunation/contract';
import { z } from 'zod';
import { outputKey } from '../runtime-keys.js';
import { formatIssues, toJsonSchema } from '../tool.js';
import type { RunScope } from './run-scope.js';
import { describeThrown, toStorableJson } from './storable.js';

/** How many times a run asks the model to fix an answer that does not match its output schema. @default 1 */
export const DEFAULT_OUTPUT_REPAIRS = 1;

/** A run's structured output: the schema its final answer must match. */
export interface OutputSpec {
  schema: z.ZodType;
  /** Repair rounds allowed after a bad answer. */
  repairs: number;
  /** The schema's root is not an object, so the model is asked for `{ "value": … }` (see `responseFormat`). */
  wrapped: boolean;
}

/**
 * The output a run must end with: the run's own schema, else the agent's, else the one the run started with
 * (resumed from the store), else none.
 */
export function resolveOutput(scope: RunScope): OutputSpec | undefined {
  const own = scope.options.output ?? scope.agent.definition.output;
  const repairs = scope.agent.definition.outputRepairs ?? DEFAULT_OUTPUT_REPAIRS;
  if (own) {
    if (!scope.state.written(outputKey)) {
      scope.state.write([{ key: outputKey, update: { schema: toJsonSchema(own), repairsUsed: 0 } }]);
    }
    const wrapped = !isObjectSchema(scope.state.peek(outputKey)?.schema ?? toJsonSchema(own));
    return { schema: own, repairs, wrapped };
  }
  const kept = scope.state.peek(outputKey);
  if (!kept) return undefined;
  return {
    schema: z.fromJSONSchema(kept.schema as Parameters<typeof z.fromJSONSchema>[0]),
    repairs,
    wrapped: !isObjectSchema(kept.schema),
  };
}

/** What model requests of a run with structured output ask for. */
export function responseFormat(scope: RunScope): ResponseFormat | undefined {
  const kept = scope.state.peek(outputKey);
  return kept ? { type: 'json', schema: wireSchema(kept.schema), name: 'output' } : undefined;
}

/**
 * OpenAI and Anthropic take only an object at the root of a response schema: any other root (an array, a
 * union, a string) is asked for as `{ "value": … }`, its `$defs` / `definitions` kept at the root.
 */
function wireSchema(schema: JsonSchema): JsonSchema {
  if (isObjectSchema(schema)) return schema;
  const { $defs, definitions, ...value } = schema;
  return {
    type: 'object',
    properties: { value },
    required: ['value'],
    additionalProperties: false,
    ...($defs === undefined ? {} : { $defs }),
    ...(definitions === undefined ? {} : { definitions }),
  };
}

function isObjectSchema(schema: JsonSchema): boolean {
  return schema.type === 'object';
}

/**
 * Checks the final answer against the output schema. A bad answer gets a repair round while any are left (an
 * internal message tells the model what was wrong, and the run goes on); after that it is `output-invalid`.
 * Returns the validated value, or `undefined` when a repair round was started.
 */
export function checkOutput(
  scope: RunScope,
  spec: OutputSpec,
  text: string,
  refused: boolean,
): { value: JsonValue } | undefined {
  const checked = refused
    ? { ok: false as const, problem: 'the model refused to answer' }
    : parseAnswer(spec, text);
  if (checked.ok) return { value: checked.value };
  const state = scope.state.peek(outputKey) ?? { schema: toJsonSchema(spec.schema), repairsUsed: 0 };
  if (refused || state.repairsUsed >= spec.repairs) {
    throw new LunationError(
      'output-invalid',
      `The final answer does not match the output schema${state.repairsUsed > 0 ? ` (after ${state.repairsUsed} repair round${state.repairsUsed === 1 ? '' : 's'})` : ''}: ${checked.problem}`,
      { details: { answer: text.slice(0, 2_000) } },
    );
  }
  scope.state.write([{ key: outputKey, update: { ...state, repairsUsed: state.repairsUsed + 1 } }]);
  scope.append({
    id: scope.ids.id(),
    role: 'user',
    content: [
      {
        type: 'text',
        text: `Your answer is not valid: ${checked.problem}. Answer again with only a JSON value that matches the required schema, and no other text.`,
      },
    ],
    metadata: { runId: scope.identity.runId, visibility: 'internal', outputRepair: true },
  });
  return undefined;
}

function parseAnswer(
  spec: OutputSpec,
  text: string,
): { ok: true; value: JsonValue } | { ok: false; problem: string } {
  const body = unfence(text.trim());
  if (body === '') return { ok: false, problem: 'the answer is empty' };
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    return { ok: false, problem: `the answer is not JSON (${describeThrown(error)})` };
  }
  // A wrapped answer is `{ "value": … }`; a model without a native JSON mode may give the bare value.
  let result = spec.schema.safeParse(isWrapped(spec, value) ? value.value : value);
  if (!result.success && isWrapped(spec, value)) {
    const whole = spec.schema.safeParse(value);
    if (whole.success) result = whole;
  }
  if (!result.success) return { ok: false, problem: formatIssues(result.error) };
  const stored = toStorableJson(result.data);
  if (!stored.ok) return { ok: false, problem: `the answer cannot be stored: ${stored.problem}` };
  return { ok: true, value: stored.value ?? null };
}

function isWrapped(spec: OutputSpec, value: unknown): value is { value: unknown } {
  return (
    spec.wrapped &&
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.keys(value).length === 1 &&
    'value' in value
  );
}

/** The body of an answer that is one fenced code block (```json … ```), else the answer. */
function unfence(text: string): string {
  const match = /^```[a-zA-Z0-9_-]*\s*\n([\s\S]*?)\n?```$/.exec(text);
  return match ? (match[1] ?? '').trim() : text;
}
