import { z } from 'zod';
import { jsonObjectSchema, jsonSchemaSchema } from './json.js';
import { messageSchema, providerMetadataSchema } from './messages.js';
import { toolChoiceSchema, toolDescriptorSchema } from './tools.js';

/**
 * Token usage of one or more model calls. `inputTokens` counts every prompt token, including the ones
 * read from or written to a prompt cache; `cacheReadTokens` / `cacheWriteTokens` are those subsets.
 * `reasoningTokens` is the subset of `outputTokens` spent on reasoning.
 */
export const usageSchema = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  cacheReadTokens: z.number().int().nonnegative(),
  cacheWriteTokens: z.number().int().nonnegative(),
  reasoningTokens: z.number().int().nonnegative(),
});
/** Token usage; see {@link usageSchema}. */
export type Usage = z.infer<typeof usageSchema>;

/** A zero usage value. */
export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
}

/** The field-wise sum of two usage values (a new object). */
export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
    reasoningTokens: a.reasoningTokens + b.reasoningTokens,
  };
}

/** How hard a reasoning model should think: a level or a token budget. */
export const reasoningEffortSchema = z.union([
  z.enum(['none', 'minimal', 'low', 'medium', 'high']),
  z.object({ budgetTokens: z.number().int().positive() }),
]);
/** How hard a reasoning model should think: a level or a token budget. */
export type ReasoningEffort = z.infer<typeof reasoningEffortSchema>;

/** Per-call settings; every field is optional and overrides the provider's defaults. */
export const modelOverridesSchema = z.object({
  model: z.string().min(1).optional(),
  temperature: z.number().min(0).max(2).optional(),
  maxTokens: z.number().int().positive().optional(),
  topP: z.number().min(0).max(1).optional(),
  reasoningEffort: reasoningEffortSchema.optional(),
  stopSequences: z.array(z.string()).optional(),
});
/** Per-call model settings; see {@link modelOverridesSchema}. */
export type ModelOverrides = z.infer<typeof modelOverridesSchema>;

/**
 * Asks for a final answer that is JSON matching `schema`. Adapters use the provider's native structured-output
 * mode where it has one; the runtime validates the answer either way.
 */
export const responseFormatSchema = z.object({
  type: z.literal('json'),
  schema: jsonSchemaSchema,
  /** A name for the schema (some providers require one). @default 'output' */
  name: z
    .string()
    .regex(/^[a-zA-Z0-9_-]{1,64}$/)
    .optional(),
  description: z.string().optional(),
});
/** A request for a JSON answer matching a schema; see {@link responseFormatSchema}. */
export type ResponseFormat = z.infer<typeof responseFormatSchema>;

/** One model call. The system prompt, if any, is the first message (role `system`). */
export const modelRequestSchema = z.object({
  messages: z.array(messageSchema),
  tools: z.array(toolDescriptorSchema),
  toolChoice: toolChoiceSchema.optional(),
  overrides: modelOverridesSchema.optional(),
  responseFormat: responseFormatSchema.optional(),
  /** Provider-specific options keyed by provider id, e.g. `{ anthropic: { promptCache: true } }`. */
  providerOptions: z.record(z.string(), jsonObjectSchema).optional(),
});
/** One model call; see {@link modelRequestSchema}. */
export type ModelRequest = z.infer<typeof modelRequestSchema>;

/** Why the model stopped, in the provider-neutral vocabulary. */
export const stopReasonSchema = z.enum([
  'end-turn',
  'max-tokens',
  'tool-use',
  'stop-sequence',
  'content-filter',
  /** The model declined; the answer holds a `refusal` part. */
  'refusal',
  'error',
]);
/** Why the model stopped, in the provider-neutral vocabulary. */
export type StopReason = z.infer<typeof stopReasonSchema>;

/**
 * A piece of text. A part carrying `providerMetadata` (e.g. citations) is the last of its text block: the
 * metadata belongs to the block, and the next text delta starts a new one.
 */
export const textDeltaPartSchema = z.object({
  type: z.literal('text-delta'),
  delta: z.string(),
  providerMetadata: providerMetadataSchema.optional(),
});
/**
 * A piece of reasoning text. A part carrying `signature` (usually with an empty delta), `redacted: true` or
 * `providerMetadata` closes the current reasoning block; the next reasoning delta starts a new block.
 * Consumers keep blocks apart.
 */
export const reasoningDeltaPartSchema = z.object({
  type: z.literal('reasoning-delta'),
  delta: z.string(),
  signature: z.string().optional(),
  redacted: z.boolean().optional(),
  providerMetadata: providerMetadataSchema.optional(),
});
/** A piece of a refusal: the model declines, and says why. */
export const refusalDeltaPartSchema = z.object({ type: z.literal('refusal-delta'), delta: z.string() });
/** A whole provider-only block (see `ProviderContentPart`), kept in the answer in stream order. */
export const providerContentStreamPartSchema = z.object({
  type: z.literal('provider-content'),
  provider: z.string().min(1),
  kind: z.string().min(1),
  value: jsonObjectSchema,
});
/** The model started a tool call. */
export const toolCallStartPartSchema = z.object({
  type: z.literal('tool-call-start'),
  toolCallId: z.string().min(1),
  toolName: z.string().min(1),
});
/** A piece of a tool call's JSON arguments. */
export const toolCallDeltaPartSchema = z.object({
  type: z.literal('tool-call-delta'),
  toolCallId: z.string().min(1),
  argumentsDelta: z.string(),
});
/** The call is complete; `arguments` is the whole accumulated JSON text. */
export const toolCallEndPartSchema = z.object({
  type: z.literal('tool-call-end'),
  toolCallId: z.string().min(1),
  toolName: z.string().min(1),
  arguments: z.string(),
  providerMetadata: providerMetadataSchema.optional(),
});
/**
 * The call's token usage; exactly one per stream, before `finish`. `unknown: true` says the provider reported
 * no usage for the call (none at all, or an incomplete response's all-zero placeholder): the zeros in `usage`
 * are not counts.
 */
export const usagePartSchema = z.object({
  type: z.literal('usage'),
  usage: usageSchema,
  unknown: z.boolean().optional(),
});
/** The end of the stream, with the stop reason; exactly one, last. */
export const finishPartSchema = z.object({
  type: z.literal('finish'),
  stopReason: stopReasonSchema,
  /** The provider's own value, for diagnostics. */
  rawStopReason: z.string().optional(),
  /** Provider data about the whole answer; kept on the assistant message. */
  providerMetadata: providerMetadataSchema.optional(),
});

/** The parts a model stream yields, in order: deltas and tool calls, then usage, then exactly one finish. */
export const modelStreamPartSchema = z.discriminatedUnion('type', [
  textDeltaPartSchema,
  reasoningDeltaPartSchema,
  refusalDeltaPartSchema,
  providerContentStreamPartSchema,
  toolCallStartPartSchema,
  toolCallDeltaPartSchema,
  toolCallEndPartSchema,
  usagePartSchema,
  finishPartSchema,
]);
/** A part of a model stream; see {@link modelStreamPartSchema}. */
export type ModelStreamPart = z.infer<typeof modelStreamPartSchema>;

/** Options of one {@link ModelProvider.stream} call. */
export interface ModelCallOptions {
  /** Aborting stops the call at once; the stream then throws a `cancelled` LunationError. */
  signal?: AbortSignal;
}

/**
 * A language model behind a provider API. Version `v1` of the interface.
 *
 * @remarks Implementations throw `LunationError`s with the provider codes (`rate-limited`, `overloaded`, ...)
 * and retry retryable ones themselves, but only before the first part was yielded.
 */
export interface ModelProvider {
  /**
   * The version of this interface the model implements; the runtime refuses a model declaring another one
   * (`specification-mismatch`). See `specificationVersions`.
   */
  readonly specificationVersion: 'v1';
  /** The provider's id, e.g. `openai`. */
  readonly provider: string;
  /** The model used when a request has no `overrides.model`. */
  readonly modelId: string;
  /** Streams one model call. */
  stream(request: ModelRequest, options?: ModelCallOptions): AsyncIterable<ModelStreamPart>;
}
