import { z } from 'zod';
import { jsonObjectSchema, jsonSchemaSchema, jsonValueSchema } from './json.js';

/** What the model is told about a tool. */
export const toolDescriptorSchema = z.object({
  name: z
    .string()
    .regex(/^[a-zA-Z0-9_-]{1,64}$/, 'tool names are 1-64 characters of letters, digits, "_" or "-"'),
  description: z.string(),
  /** JSON Schema of the arguments object. */
  parameters: jsonSchemaSchema,
});
/** What the model is told about a tool; see {@link toolDescriptorSchema}. */
export type ToolDescriptor = z.infer<typeof toolDescriptorSchema>;

/**
 * One call of a tool by the model. `arguments` is the raw JSON text the model produced; `toolCallId` is the
 * provider's id, `callId` the runtime's own (unique in the thread).
 */
export const toolCallSchema = z.object({
  toolCallId: z.string().min(1),
  toolName: z.string().min(1),
  arguments: z.string(),
  /** The runtime's id of the call, unique in the thread (see {@link toolCallIdentity}). */
  callId: z.string().min(1).optional(),
});
/** One call of a tool by the model; see {@link toolCallSchema}. */
export type ToolCall = z.infer<typeof toolCallSchema>;

/**
 * The identity of a call across its run: the runtime's `callId`, or — for a call stored before it existed —
 * the provider's `toolCallId`. Ledger entries and idempotency keys are keyed by it.
 */
export function toolCallIdentity(call: { toolCallId: string; callId?: string | undefined }): string {
  return call.callId ?? call.toolCallId;
}

/** How a tool call went, error, or pending (its result comes later). */
export const toolResultStatusSchema = z.enum(['success', 'error', 'pending']);
/** How a tool call went; see {@link toolResultStatusSchema}. */
export type ToolResultStatus = z.infer<typeof toolResultStatusSchema>;

/**
 * The outcome of a tool call. The model sees `message` when set, otherwise the JSON of `data`.
 * `metadata` is never sent to the model.
 */
export const toolResultSchema = z.object({
  status: toolResultStatusSchema,
  data: jsonValueSchema.optional(),
  message: z.string().optional(),
  metadata: jsonObjectSchema.optional(),
});
/** The outcome of a tool call; see {@link toolResultSchema}. */
export type ToolResult = z.infer<typeof toolResultSchema>;

/** How to tell the model to use tools. */
export const toolChoiceSchema = z.union([
  z.enum(['auto', 'none', 'required']),
  z.object({ type: z.literal('tool'), toolName: z.string().min(1) }),
]);
/** How to tell the model to use tools; see {@link toolChoiceSchema}. */
export type ToolChoice = z.infer<typeof toolChoiceSchema>;

/** The text the model sees for a tool result. */
export function toolResultText(result: ToolResult): string {
  if (result.message !== undefined) return result.message;
  if (result.data === undefined) return result.status === 'error' ? 'error' : '';
  return typeof result.data === 'string' ? result.data : JSON.stringify(result.data);
}
