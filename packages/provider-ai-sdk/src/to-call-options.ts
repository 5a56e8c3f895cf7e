import type {
  LanguageModelV4CallOptions,
  LanguageModelV4FilePart,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4TextPart,
  LanguageModelV4ToolResultOutput,
  SharedV4ProviderOptions,
} from '@ai-sdk/provider';
import {
  type AssistantMessage,
  type ImagePart,
  type JsonObject,
  type Message,
  type ModelRequest,
  type ProviderMetadata,
  type ReasoningEffort,
  type ToolResultPart,
  toolResultText,
} from '@lunation/contract';

/** The V4 call options for a contract request (without `abortSignal` and `headers`, added per attempt). */
export function toCallOptions(request: ModelRequest, providerId: string): LanguageModelV4CallOptions {
  const overrides = request.overrides ?? {};
  const options: LanguageModelV4CallOptions = { prompt: toPrompt(request.messages, providerId) };
  if (request.tools.length > 0) {
    options.tools = request.tools.map((tool) => ({
      type: 'function',
      name: tool.name,
      description: tool.description,
      inputSchema: tool.parameters as never,
    }));
    if (request.toolChoice !== undefined) {
      options.toolChoice =
        typeof request.toolChoice === 'string'
          ? { type: request.toolChoice }
          : { type: 'tool', toolName: request.toolChoice.toolName };
    }
  }
  if (overrides.maxTokens !== undefined) options.maxOutputTokens = overrides.maxTokens;
  if (overrides.temperature !== undefined) options.temperature = overrides.temperature;
  if (overrides.topP !== undefined) options.topP = overrides.topP;
  if (overrides.stopSequences !== undefined && overrides.stopSequences.length > 0)
    options.stopSequences = overrides.stopSequences;
  if (overrides.reasoningEffort !== undefined) options.reasoning = toReasoning(overrides.reasoningEffort);
  if (request.responseFormat !== undefined) {
    const { schema, name, description } = request.responseFormat;
    options.responseFormat = {
      type: 'json',
      schema: schema as never,
      ...(name === undefined ? {} : { name }),
      ...(description === undefined ? {} : { description }),
    };
  }
  if (request.providerOptions !== undefined)
    options.providerOptions = request.providerOptions as SharedV4ProviderOptions;
  return options;
}

/** A token budget becomes the nearest named level (the V4 spec has levels only). */
function toReasoning(effort: ReasoningEffort): NonNullable<LanguageModelV4CallOptions['reasoning']> {
  if (typeof effort === 'string') return effort;
  if (effort.budgetTokens < 2_048) return 'minimal';
  if (effort.budgetTokens < 4_096) return 'low';
  return effort.budgetTokens < 16_384 ? 'medium' : 'high';
}

function toPrompt(messages: readonly Message[], providerId: string): LanguageModelV4Prompt {
  const prompt: LanguageModelV4Prompt = [];
  for (const message of messages) {
    const converted = toMessage(message, providerId);
    if (converted !== undefined) prompt.push(converted);
  }
  return prompt;
}

function toMessage(message: Message, providerId: string): LanguageModelV4Message | undefined {
  switch (message.role) {
    case 'system': {
      const text = message.content.map((part) => part.text).join('\n\n');
      return text === '' ? undefined : { role: 'system', content: text };
    }
    case 'user': {
      const content = message.content.flatMap(
        (part): Array<LanguageModelV4TextPart | LanguageModelV4FilePart> => {
          if (part.type === 'image') return [imagePart(part)];
          return part.text === ''
            ? []
            : [{ type: 'text', text: part.text, ...options(part.providerMetadata) }];
        },
      );
      return content.length === 0 ? undefined : { role: 'user', content };
    }
    case 'assistant': {
      const content = assistantContent(message, providerId);
      return content.length === 0 ? undefined : { role: 'assistant', content };
    }
    case 'tool':
      return { role: 'tool', content: message.content.map(toolResult) };
  }
}

type AssistantContent = Extract<LanguageModelV4Message, { role: 'assistant' }>['content'];

/**
 * Parts go back with their provider metadata as `providerOptions` (signatures, reasoning item ids, ...).
 * This bridge's `provider-content` (provider-executed tool calls and results, custom parts) goes back as the
 * V4 part it came from; refusals, sources and other providers' content are left out.
 */
function assistantContent(message: AssistantMessage, providerId: string): AssistantContent {
  const content: AssistantContent = [];
  for (const part of message.content) {
    switch (part.type) {
      case 'text':
        if (part.text !== '' || part.providerMetadata)
          content.push({ type: 'text', text: part.text, ...options(part.providerMetadata) });
        break;
      case 'reasoning':
        content.push({ type: 'reasoning', text: part.text, ...options(part.providerMetadata) });
        break;
      case 'tool-call':
        content.push({
          type: 'tool-call',
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          input: parseInput(part.arguments),
          ...options(part.providerMetadata),
        });
        break;
      case 'provider-content': {
        if (part.provider !== providerId) break;
        const value = part.value;
        const metadata = isObject(value.providerMetadata)
          ? (value.providerMetadata as ProviderMetadata)
          : undefined;
        if (part.kind === 'tool-call') {
          content.push({
            type: 'tool-call',
            toolCallId: String(value.toolCallId),
            toolName: String(value.toolName),
            input: typeof value.input === 'string' ? parseInput(value.input) : value.input,
            providerExecuted: true,
            ...options(metadata),
          });
        } else if (part.kind === 'tool-result') {
          const result = value.result ?? null;
          content.push({
            type: 'tool-result',
            toolCallId: String(value.toolCallId),
            toolName: String(value.toolName),
            output:
              value.isError === true
                ? { type: 'error-json', value: result }
                : { type: 'json', value: result },
            ...options(metadata),
          });
        } else if (part.kind === 'custom' && typeof value.kind === 'string' && value.kind.includes('.')) {
          content.push({ type: 'custom', kind: value.kind as `${string}.${string}`, ...options(metadata) });
        }
        break;
      }
      default:
        break;
    }
  }
  return content;
}

function toolResult(part: ToolResultPart): {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: LanguageModelV4ToolResultOutput;
} {
  const { result } = part;
  let output: LanguageModelV4ToolResultOutput;
  if (result.status === 'error') output = { type: 'error-text', value: toolResultText(result) };
  else if (result.message !== undefined || result.data === undefined || typeof result.data === 'string')
    output = { type: 'text', value: toolResultText(result) };
  else output = { type: 'json', value: result.data };
  return { type: 'tool-result', toolCallId: part.toolCallId, toolName: part.toolName, output };
}

function imagePart(part: ImagePart): LanguageModelV4FilePart {
  const { source } = part;
  if (source.type === 'url')
    return { type: 'file', mediaType: 'image', data: { type: 'url', url: new URL(source.url) } };
  return { type: 'file', mediaType: source.mediaType, data: { type: 'data', data: source.data } };
}

/** JSON arguments as a value; text that is not JSON is passed on as the string it is. */
function parseInput(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function options(metadata: ProviderMetadata | undefined): { providerOptions?: SharedV4ProviderOptions } {
  return metadata === undefined
    ? {}
    : { providerOptions: structuredClone(metadata) as SharedV4ProviderOptions };
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
