import {
  type AssistantMessage,
  type ImagePart,
  type JsonObject,
  LunationError,
  type Message,
  type ModelRequest,
  type ReasoningEffort,
  type ToolChoice,
  toolResultText,
  type UserMessage,
} from '@lunation/contract';
import type {
  ChatCompletionContentPart,
  ChatCompletionContentPartText,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';

/** Which body field carries `overrides.maxTokens`. */
export type MaxTokensField = 'max_completion_tokens' | 'max_tokens';

export interface BuildRequestSettings {
  model: string;
  maxTokensField: MaxTokensField;
  /** `request.providerOptions[providerId]`. */
  providerOptions: JsonObject | undefined;
}

/** The Chat Completions streaming body for a contract request. */
export function buildRequest(
  request: ModelRequest,
  settings: BuildRequestSettings,
): ChatCompletionCreateParamsStreaming {
  const overrides = request.overrides ?? {};
  const body: ChatCompletionCreateParamsStreaming = {
    model: overrides.model ?? settings.model,
    messages: request.messages.flatMap(toMessages),
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

  const extraBody = settings.providerOptions?.extraBody;
  if (extraBody !== undefined) {
    if (typeof extraBody !== 'object' || extraBody === null || Array.isArray(extraBody)) {
      throw new LunationError(
        'invalid-argument',
        'providerOptions.openai.extraBody must be a JSON object of Chat Completions body fields',
      );
    }
    Object.assign(body, extraBody);
  }
  return body;
}

function toMessages(message: Message): ChatCompletionMessageParam[] {
  switch (message.role) {
    case 'system':
      return [{ role: 'system', content: textContent(message.content) }];
    case 'user':
      return [{ role: 'user', content: userContent(message) }];
    case 'assistant':
      return assistantMessages(message);
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

/** Reasoning parts are dropped: Chat Completions takes no reasoning back. */
function assistantMessages(message: AssistantMessage): ChatCompletionMessageParam[] {
  let text = '';
  const toolCalls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> =
    [];
  for (const part of message.content) {
    if (part.type === 'text') text += part.text;
    else if (part.type === 'tool-call') {
      toolCalls.push({
        id: part.toolCallId,
        type: 'function',
        function: { name: part.toolName, arguments: part.arguments },
      });
    }
  }
  if (text === '' && toolCalls.length === 0) return [];
  return [
    {
      role: 'assistant',
      content: text === '' ? null : text,
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    },
  ];
}

function toToolChoice(choice: ToolChoice): ChatCompletionToolChoiceOption {
  if (typeof choice === 'string') return choice;
  return { type: 'function', function: { name: choice.toolName } };
}

/** A token budget maps to the nearest effort level. */
function toReasoningEffort(
  effort: ReasoningEffort,
): NonNullable<ChatCompletionCreateParamsStreaming['reasoning_effort']> {
  if (typeof effort === 'string') return effort;
  const budget = effort.budgetTokens;
  if (budget < 1_024) return 'minimal';
  if (budget < 4_096) return 'low';
  if (budget < 16_384) return 'medium';
  return 'high';
}
