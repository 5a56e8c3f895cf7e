import type { JsonSchema } from '@lunation/contract';

/** Whether structured outputs and tools run in OpenAI's strict mode: `'auto'` decides per schema. */
export type StrictSchemas = 'auto' | boolean;

const schemaMaps = ['properties', '$defs', 'definitions', 'patternProperties'];
const schemaLists = ['anyOf', 'allOf', 'oneOf', 'prefixItems'];
const schemaSingles = ['items', 'not', 'additionalProperties', 'contains'];

/**
 * Whether OpenAI's strict mode accepts `schema` as it is: every object schema lists all its properties in
 * `required` and sets `additionalProperties: false`, at every depth.
 */
export function isStrictCompatible(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return true;
  const node = schema as Record<string, unknown>;
  const isObject =
    node.type === 'object' ||
    (Array.isArray(node.type) && node.type.includes('object')) ||
    typeof node.properties === 'object';
  if (isObject) {
    if (node.additionalProperties !== false) return false;
    const properties = (node.properties ?? {}) as Record<string, unknown>;
    const required = Array.isArray(node.required) ? node.required : [];
    if (!Object.keys(properties).every((name) => required.includes(name))) return false;
  }
  for (const key of schemaMaps) {
    const map = node[key];
    if (typeof map === 'object' && map !== null && !Object.values(map).every(isStrictCompatible))
      return false;
  }
  for (const key of schemaLists) {
    const list = node[key];
    if (Array.isArray(list) && !list.every(isStrictCompatible)) return false;
  }
  return schemaSingles.every((key) => isStrictCompatible(node[key]));
}

/** The `strict` flag for a schema under the `strictSchemas` setting. */
export function strictFor(schema: JsonSchema, setting: StrictSchemas): boolean {
  return setting === 'auto' ? isStrictCompatible(schema) : setting;
}
