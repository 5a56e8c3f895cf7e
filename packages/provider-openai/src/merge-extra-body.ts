import { type JsonObject, type JsonValue, LunationError } from '@lunation/contract';

/**
 * Merges `providerOptions[providerId].extraBody` into a request body: objects merge key by key at every depth
 * (so `{ stream_options: { include_obfuscation: false } }` keeps `include_usage`), anything else replaces.
 */
export function mergeExtraBody<Body extends object>(body: Body, extraBody: unknown, label: string): Body {
  if (extraBody === undefined) return body;
  if (!isPlainObject(extraBody)) {
    throw new LunationError(
      'invalid-argument',
      `providerOptions.${label}.extraBody must be a JSON object of request body fields, e.g. { "user": "u-42" }; got ${JSON.stringify(extraBody)}`,
    );
  }
  return mergeObjects(body as unknown as JsonObject, extraBody) as unknown as Body;
}

function mergeObjects(target: JsonObject, source: JsonObject): JsonObject {
  const merged: JsonObject = { ...target };
  for (const [key, value] of Object.entries(source)) {
    const existing = merged[key];
    merged[key] = isPlainObject(existing) && isPlainObject(value) ? mergeObjects(existing, value) : value;
  }
  return merged;
}

function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `JsonValue` narrowing for provider options. */
export function optionObject(value: JsonValue | undefined): JsonObject | undefined {
  return isPlainObject(value) ? value : undefined;
}
