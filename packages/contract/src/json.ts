import { z } from 'zod';

/** Any JSON-serialisable value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Schema of any JSON-serialisable value. */
export const jsonValueSchema: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([
    z.null(),
    z.boolean(),
    z.number(),
    z.string(),
    z.array(jsonValueSchema),
    z.record(z.string(), jsonValueSchema),
  ]),
);

/** A JSON object (string keys, JSON values). */
export const jsonObjectSchema = z.record(z.string(), jsonValueSchema);
/** A JSON object: string keys, JSON values. */
export type JsonObject = z.infer<typeof jsonObjectSchema>;

/** A JSON Schema document (draft 2020-12 or 7), kept as plain JSON. */
export const jsonSchemaSchema = z.record(z.string(), z.unknown());
/** A JSON Schema document kept as plain JSON. */
export type JsonSchema = z.infer<typeof jsonSchemaSchema>;
