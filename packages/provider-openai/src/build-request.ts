import {
  type AssistantMessage,
  type ImagePart,
  type JsonObject,
  LunationError,
  type Message,
  type ModelRequest,
  type ReasoningEffort,
  type ResponseFormat,
  type ToolChoice,
  toolResultText,
  type UserMessage,
} from '@lunation/contract';
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionContentPart,
  ChatCompletionContentPartText,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import type { ResponseFormatJSONSchema } from 'openai/resources/shared';
import { mergeExtraBody } from './merge-extra-body.js';
import { type StrictSchemas, strictFor } from './strict-schema.js';

/** Which body field carries `overrides.maxTokens`. */
export type MaxTokensField = 'max_completion_tokens' | 'max_tokens';

/**
 * Which reasoning parts go back to the server, as `reasoning_content` on assistant messages: none (OpenAI
 * takes no reasoning back), those of assistant turns that called tools (DeepSeek thinking mode, Moonshot Kimi
 * K2: required while a tool loop runs), or all.
 */
export type ReasoningHistory = 'omit' | 'tool-call-turns' | 'all';

export interface BuildRequestSettings {
  model: string;
  maxTokensField: MaxTokensField;
  reasoningHistory: ReasoningHistory;
  strictSchemas: StrictSchemas;
  /** `request.providerOptions[providerId]`. */
  providerOptions: JsonObject | undefined;
  /** The key of `providerOptions`, for error messages. */
  providerId: string;
}

/** The Chat Completions streaming body for a contract request. */
export function buildRequest(
  request: ModelRequest,
  settings: BuildRequestSettings,
): ChatCompletionCreateParamsStreaming {
  const overrides = request.overrides ?? {};
  const body: ChatCompletionCreateParamsStreaming = {
    model: overrides.model ?? settings.model,
    messages: request.messages.flatMap((message) => toMessages(message, settings.reasoningHistory)),
    stream: true,
    stream_options: { include_usage: true },
  };
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
    if (request.toolChoice !== undefined) body.tool_choice = toToolChoice(request.toolChoice);
  }
  if (overrides.temperature !== undefined) body.temperature = overrides.temperature;
  if (overrides.topP !== undefined) body.top_p = overrides.topP;
  if (overrides.maxTokens !== undefined) body[settings.maxTokensField] = overrides.maxTokens;
  if (overrides.stopSequences !== undefined && overrides.stopSequences.length > 0)
    body.stop = overrides.stopSequences;
  if (overrides.reasoningEffort !== undefined)
    body.reasoning_effort = toReasoningEffort(overrides.reasoningEffort);
  if (request.responseFormat !== undefined)
    body.response_format = toResponseFormat(request.responseFormat, settings.strictSchemas);

  const merged = mergeExtraBody(body, settings.providerOptions?.extraBody, settings.providerId);
  const choices = (merged as { n?: unknown }).n;
  if (choices !== undefined && choices !== null && choices !== 1) {
    throw new LunationError(
      'invalid-argument',
      `OpenAIModel streams one choice per call, but providerOptions.${settings.providerId}.extraBody sets n=${JSON.stringify(choices)}; remove \`n\` and call the model once per answer you need.`,
      { details: { n: choices as JsonObject[string] } },
    );
  }
  return merged;
}

/** `response_format: { type: 'json_schema' }` (Structured Outputs). */
export function toResponseFormat(
  format: ResponseFormat,
  strictSchemas: StrictSchemas,
): ResponseFormatJSONSchema {
  return {
    type: 'json_schema',
    json_schema: {
      name: format.name ?? 'output',
      ...(format.description === undefined ? {} : { description: format.description }),
      schema: format.schema,
      strict: strictFor(format.schema, strictSchemas),
    },
  };
}

function toMessages(message: Message, reasoningHistory: ReasoningHistory): ChatCompletionMessageParam[] {
  switch (message.role) {
    case 'system':
      return [{ role: 'system', content: textContent(message.content) }];
    case 'user':
      return [{ role: 'user', content: userContent(message) }];
    case 'assistant':
      return assistantMessages(message, reasoningHistory);
    case 'tool':
      return message.content.map((part) => ({
        role: 'tool',
        tool_call_id: part.toolCallId,
        content: toolResultText(part.result),
      }));
  }
}

function textContent(parts: ReadonlyArray<{ text: string }>): string | ChatCompletionContentPartText[] {
  if (parts.length === 1) return parts[0]!.text;
  return parts.map((part) => ({ type: 'text', text: part.text }));
}

function userContent(message: UserMessage): string | ChatCompletionContentPart[] {
  if (message.content.every((part) => part.type === 'text')) {
    return textContent(message.content as ReadonlyArray<{ text: string }>);
  }
  return message.content.map((part) =>
    part.type === 'text'
      ? { type: 'text', text: part.text }
      : { type: 'image_url', image_url: { url: imageUrl(part) } },
  );
}

function imageUrl(part: ImagePart): string {
  const { source } = part;
  return source.type === 'url' ? source.url : `data:${source.mediaType};base64,${source.data}`;
}

/**
 * Text, refusals and tool calls become one assistant message. Reasoning goes back as `reasoning_content`
 * only as `reasoningHistory` says (redacted reasoning never does); provider-content parts of other APIs are
 * left out.
 */
function assistantMessages(
  message: AssistantMessage,
  reasoningHistory: ReasoningHistory,
): ChatCompletionMessageParam[] {
  let text = '';
  let refusal = '';
  let reasoning = '';
  const toolCalls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> =
    [];
  for (const part of message.content) {
    if (part.type === 'text') text += part.text;
    else if (part.type === 'refusal') refusal += part.text;
    else if (part.type === 'reasoning' && !part.redacted) reasoning += part.text;
    else if (part.type === 'tool-call') {
      toolCalls.push({
        id: part.toolCallId,
        type: 'function',
        function: { name: part.toolName, arguments: part.arguments },
      });
    }
  }
  if (text === '' && refusal === '' && toolCalls.length === 0) return [];
  const assistant: ChatCompletionAssistantMessageParam & { reasoning_content?: string } = {
    role: 'assistant',
    content: text === '' ? null : text,
  };
  if (refusal !== '') assistant.refusal = refusal;
  if (toolCalls.length > 0) assistant.tool_calls = toolCalls;
  const sendReasoning =
    reasoningHistory === 'all' || (reasoningHistory === 'tool-call-turns' && toolCalls.length > 0);
  if (sendReasoning && reasoning !== '') assistant.reasoning_content = reasoning;
  return [assistant];
}

function toToolChoice(choice: ToolChoice): ChatCompletionToolChoiceOption {
  if (typeof choice === 'string') return choice;
  return { type: 'function', function: { name: choice.toolName } };
}

/** A token budget maps to the nearest effort level. */
export function toReasoningEffort(
  effort: ReasoningEffort,
): NonNullable<ChatCompletionCreateParamsStreaming['reasoning_effort']> {
  if (typeof effort === 'string') return effort;
  const budget = effort.budgetTokens;
  if (budget < 1_024) return 'minimal';
  if (budget < 4_096) return 'low';
  if (budget < 16_384) return 'medium';
  return 'high';
}
