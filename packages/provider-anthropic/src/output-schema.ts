import type { JsonSchema } from '@lunation/contract';

/** The string formats `output_config.format` accepts. */
const supportedFormats = new Set([
  'date-time',
  'time',
  'date',
  'duration',
  'email',
  'hostname',
  'uri',
  'ipv4',
  'ipv6',
  'uuid',
]);
/** Keywords sent as they are. */
const keptKeywords = new Set(['type', 'enum', 'const', 'default', 'title', 'required', '$ref', '$id']);
const schemaMaps = new Set(['properties', '$defs', 'definitions']);

/**
 * A JSON Schema as Anthropic's structured outputs (`output_config.format.schema`) accept it, the way the
 * Anthropic SDK's own helper prepares one: constraints the API rejects with a 400 (`minimum`, `maxLength`,
 * `pattern`, `maxItems`, unknown formats, ...) move into the node's description, so the model still reads
 * them and the runtime still validates them; `oneOf` becomes `anyOf`; objects without `additionalProperties`
 * are closed. Two exceptions: an object left open on purpose (`additionalProperties` a schema or `true`,
 * e.g. a record) goes as it is, for the API to reject rather than to have the model answer `{}`; and the
 * safe-integer bounds zod writes for every `.int()` are dropped, as they say nothing to the model.
 */
export function toOutputSchema(schema: JsonSchema): JsonSchema {
  return toNode(schema) as JsonSchema;
}

function toNode(node: unknown): unknown {
  if (!isPlainObject(node)) return node;
  const result: Record<string, unknown> = {};
  const moved: [string, unknown][] = [];
  for (const [key, value] of Object.entries(node)) {
    if (keptKeywords.has(key)) result[key] = value;
    else if (key === 'description' || key === '$schema') continue;
    else if (schemaMaps.has(key) && isPlainObject(value)) result[key] = mapValues(value);
    else if (key === 'items') result.items = Array.isArray(value) ? value.map(toNode) : toNode(value);
    else if ((key === 'anyOf' || key === 'oneOf') && Array.isArray(value)) result.anyOf = value.map(toNode);
    else if (key === 'allOf' && Array.isArray(value)) result.allOf = value.map(toNode);
    else if (key === 'additionalProperties') result.additionalProperties = toNode(value);
    else if (key === 'format' && typeof value === 'string' && supportedFormats.has(value))
      result.format = value;
    else if (key === 'minItems' && (value === 0 || value === 1)) result.minItems = value;
    else if (isSafeIntegerBound(key, value)) continue;
    else moved.push([key, value]);
  }
  const isObject = node.type === 'object' || isPlainObject(node.properties);
  if (isObject && result.additionalProperties === undefined) result.additionalProperties = false;
  const description = [
    ...(typeof node.description === 'string' ? [node.description] : []),
    ...(moved.length > 0
      ? [`{${moved.map(([key, value]) => `${key}: ${JSON.stringify(value)}`).join(', ')}}`]
      : []),
  ].join('\n\n');
  if (description !== '') result.description = description;
  return result;
}

function mapValues(map: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(map).map(([name, node]) => [name, toNode(node)]));
}

function isSafeIntegerBound(key: string, value: unknown): boolean {
  return (
    (key === 'minimum' && value === Number.MIN_SAFE_INTEGER) ||
    (key === 'maximum' && value === Number.MAX_SAFE_INTEGER)
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
