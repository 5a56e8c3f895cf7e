import { z } from 'zod';
import { jsonObjectSchema } from './json.js';
import { toolResultSchema } from './tools.js';

/**
 * Provider-specific data kept on a part or message, keyed by provider id (`anthropic`, `openai`, ...), e.g.
 * citations, reasoning item ids or encrypted reasoning. Each adapter reads its own key when it sends the
 * history back and ignores the others.
 */
export const providerMetadataSchema = z.record(z.string(), jsonObjectSchema);
/** Provider-specific data by provider id; see {@link providerMetadataSchema}. */
export type ProviderMetadata = z.infer<typeof providerMetadataSchema>;

/** Plain text. */
export const textPartSchema = z.object({
  type: z.literal('text'),
  text: z.string(),
  providerMetadata: providerMetadataSchema.optional(),
});
/** Plain text in a message. */
export type TextPart = z.infer<typeof textPartSchema>;

/** Where an image comes from: a URL or base64 data with its media type. */
export const imageSourceSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('url'), url: z.string().url() }),
  z.object({ type: z.literal('base64'), mediaType: z.string().min(1), data: z.string().min(1) }),
]);
/** Where an image comes from: a URL or base64 data with its media type. */
export type ImageSource = z.infer<typeof imageSourceSchema>;

/** An image in a user message. */
export const imagePartSchema = z.object({ type: z.literal('image'), source: imageSourceSchema });
/** An image in a user message. */
export type ImagePart = z.infer<typeof imagePartSchema>;

/** Model reasoning. `signature` is the provider's proof (Anthropic thinking) and must be sent back as-is. */
export const reasoningPartSchema = z.object({
  type: z.literal('reasoning'),
  text: z.string(),
  signature: z.string().optional(),
  /** Set when the provider redacted the reasoning; `text` then holds the opaque payload. */
  redacted: z.boolean().optional(),
  providerMetadata: providerMetadataSchema.optional(),
});
/** Model reasoning, with the provider's signature when it has one. */
export type ReasoningPart = z.infer<typeof reasoningPartSchema>;

/**
 * A tool call as the model produced it. `arguments` is the raw JSON text (it may be invalid). `toolCallId` is
 * the provider's id, sent back to it on the wire and pairing the call with its result; `callId` is the
 * runtime's own id of the call, unique in the thread (the execution ledger and idempotency keys use it).
 */
export const toolCallPartSchema = z.object({
  type: z.literal('tool-call'),
  toolCallId: z.string().min(1),
  toolName: z.string().min(1),
  arguments: z.string(),
  /** The runtime's id of the call, unique in the thread; absent on calls stored before it existed. */
  callId: z.string().min(1).optional(),
  providerMetadata: providerMetadataSchema.optional(),
});
/** A tool call in an assistant message. */
export type ToolCallPart = z.infer<typeof toolCallPartSchema>;

/** The model declined to answer; `text` is its explanation, kept apart from ordinary text. */
export const refusalPartSchema = z.object({ type: z.literal('refusal'), text: z.string() });
/** The model's refusal in an assistant message; see {@link refusalPartSchema}. */
export type RefusalPart = z.infer<typeof refusalPartSchema>;

/**
 * A block only its provider understands (a server tool's call or result, a hosted tool's item, ...). The
 * adapter of `provider` sends `value` back as it came; other adapters leave it out.
 */
export const providerContentPartSchema = z.object({
  type: z.literal('provider-content'),
  provider: z.string().min(1),
  /** The provider's own block type, e.g. `server_tool_use`. */
  kind: z.string().min(1),
  value: jsonObjectSchema,
});
/** A block only its provider understands; see {@link providerContentPartSchema}. */
export type ProviderContentPart = z.infer<typeof providerContentPartSchema>;

/** The result of a tool call, in a tool message. */
export const toolResultPartSchema = z.object({
  type: z.literal('tool-result'),
  toolCallId: z.string().min(1),
  toolName: z.string().min(1),
  result: toolResultSchema,
});
/** The result of a tool call, in a tool message. */
export type ToolResultPart = z.infer<typeof toolResultPartSchema>;

/** Any part of a message's content. */
export const contentPartSchema = z.discriminatedUnion('type', [
  textPartSchema,
  imagePartSchema,
  reasoningPartSchema,
  toolCallPartSchema,
  toolResultPartSchema,
  refusalPartSchema,
  providerContentPartSchema,
]);
/** Any part of a message's content. */
export type ContentPart = z.infer<typeof contentPartSchema>;

/**
 * Free-form message metadata. Known keys: `runId`, `agentId`, `step`, `visibility` (`'all' | 'internal'`),
 * `compaction` (`{ fromSeq, toSeq }` on summary messages), `supersededTickets`, `createdAt`; on a durable run's
 * assistant messages, its model call's `inferredAt` (when it started, epoch ms), `modelMs` (how long it took)
 * and `usage` (its `Usage` counts that are not zero).
 */
export const messageMetadataSchema = jsonObjectSchema;
/** Free-form message metadata; see {@link messageMetadataSchema} for the known keys. */
export type MessageMetadata = z.infer<typeof messageMetadataSchema>;

const base = { id: z.string().min(1), metadata: messageMetadataSchema.optional() };

/** Instructions for the model (the system prompt): text parts only. */
export const systemMessageSchema = z.object({
  ...base,
  role: z.literal('system'),
  content: z.array(textPartSchema),
});
/** Instructions for the model (the system prompt): text parts only. */
export type SystemMessage = z.infer<typeof systemMessageSchema>;

/** What the user said: text and images. */
export const userMessageSchema = z.object({
  ...base,
  role: z.literal('user'),
  content: z.array(z.discriminatedUnion('type', [textPartSchema, imagePartSchema])),
});
/** What the user said: text and images. */
export type UserMessage = z.infer<typeof userMessageSchema>;

/** What the model answered: text, reasoning and tool calls. */
export const assistantMessageSchema = z.object({
  ...base,
  role: z.literal('assistant'),
  content: z.array(
    z.discriminatedUnion('type', [
      textPartSchema,
      reasoningPartSchema,
      toolCallPartSchema,
      refusalPartSchema,
      providerContentPartSchema,
    ]),
  ),
  /** Provider data about the whole answer (e.g. a response id, stop details). */
  providerMetadata: providerMetadataSchema.optional(),
});
/** What the model answered: text, reasoning and tool calls. */
export type AssistantMessage = z.infer<typeof assistantMessageSchema>;

/** Results of the tool calls of the assistant message before it. */
export const toolMessageSchema = z.object({
  ...base,
  role: z.literal('tool'),
  content: z.array(toolResultPartSchema),
});
/** Results of the tool calls of the assistant message before it. */
export type ToolMessage = z.infer<typeof toolMessageSchema>;

/** A message of any role: an id, a role, content parts and optional metadata. */
export const messageSchema = z.discriminatedUnion('role', [
  systemMessageSchema,
  userMessageSchema,
  assistantMessageSchema,
  toolMessageSchema,
]);
/** A message of any role: an id, a role, content parts and optional metadata. */
export type Message = z.infer<typeof messageSchema>;
/** `system`, `user`, `assistant` or `tool`. */
export type MessageRole = Message['role'];

/** The concatenated text parts of a message. */
export function messageText(message: Message): string {
  let text = '';
  for (const part of message.content) if (part.type === 'text') text += part.text;
  return text;
}
