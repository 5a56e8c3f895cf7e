import type { BetaRequestMCPServerURLDefinition } from '@anthropic-ai/sdk/resources/beta/messages/messages';
import type {
  ToolChoice as AnthropicToolChoice,
  Base64ImageSource,
  ContentBlockParam,
  ImageBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  TextBlockParam,
  ThinkingConfigParam,
  Tool,
  ToolUnion,
} from '@anthropic-ai/sdk/resources/messages';
import {
  type AssistantMessage,
  type ImagePart,
  type JsonObject,
  type JsonValue,
  LunationError,
  type Message,
  type ModelRequest,
  type ReasoningEffort,
  type ToolChoice,
  toolResultText,
} from '@lunation/contract';
import { toOutputSchema } from './output-schema.js';

/** Thinking budgets for the named reasoning efforts. */
export const thinkingBudgets = { minimal: 1_024, low: 2_048, medium: 8_192, high: 24_576 } as const;

/** How reasoning effort becomes thinking: token budgets (up to Claude 4.5) or adaptive thinking (4.6 and later). */
export type ThinkingMode = 'auto' | 'budget' | 'adaptive';

/**
 * A tool Anthropic runs itself (web search, web fetch, code execution, tool search), in the Messages API's own
 * shape, e.g. `{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }`.
 */
export type AnthropicServerTool = Extract<
  ToolUnion,
  {
    type:
      | `web_search_${string}`
      | `web_fetch_${string}`
      | `code_execution_${string}`
      | `tool_search_tool_${string}`;
  }
>;

/** A remote MCP server for Anthropic's MCP connector, in the API's shape (`{ type: 'url', url, name, ... }`). */
export type AnthropicMcpServer = BetaRequestMCPServerURLDefinition;

/** The `anthropic-beta` value the MCP connector needs. */
export const MCP_CONNECTOR_BETA = 'mcp-client-2025-04-04';

export interface BuildRequestSettings {
  model: string;
  thinkingMode: ThinkingMode;
  /** `max_tokens` when the request has no `overrides.maxTokens`. */
  maxTokens: number;
  /** Cache breakpoints unless `providerOptions.anthropic.promptCache` says otherwise. */
  promptCache: boolean;
  /** `request.providerOptions[providerId]`. */
  providerOptions: JsonObject | undefined;
  /** The adapter's provider id: the key of the provider metadata and provider content it sends back. */
  providerId: string;
  /** Server tools sent after the request's tools. */
  serverTools: readonly AnthropicServerTool[];
  /** MCP connector servers (`mcp_servers`). */
  mcpServers: readonly AnthropicMcpServer[];
}

type UserOrAssistant = Extract<MessageParam, { role: 'user' | 'assistant' }>;

/** The Messages API streaming body for a contract request. */
export function buildRequest(
  request: ModelRequest,
  settings: BuildRequestSettings,
): MessageCreateParamsStreaming {
  const overrides = request.overrides ?? {};
  const system: TextBlockParam[] = [];
  const messages: UserOrAssistant[] = [];
  for (const message of request.messages) {
    if (message.role === 'system') {
      for (const part of message.content)
        if (part.text !== '') system.push({ type: 'text', text: part.text });
      continue;
    }
    const blocks = toBlocks(message, settings.providerId);
    if (blocks.length === 0) continue;
    const role = message.role === 'assistant' ? 'assistant' : 'user';
    const previous = messages.at(-1);
    if (previous?.role === role) (previous.content as ContentBlockParam[]).push(...blocks);
    else messages.push({ role, content: blocks });
  }

  const model = overrides.model ?? settings.model;
  const adaptive =
    settings.thinkingMode === 'adaptive' || (settings.thinkingMode === 'auto' && usesAdaptiveThinking(model));
  const thinking = adaptive ? undefined : toBudgetThinking(overrides.reasoningEffort);
  const effort = adaptive ? toEffort(overrides.reasoningEffort) : undefined;
  let maxTokens = overrides.maxTokens ?? settings.maxTokens;
  // Thinking counts toward max_tokens; keep room for the answer.
  if (thinking?.type === 'enabled' && maxTokens <= thinking.budget_tokens)
    maxTokens += thinking.budget_tokens;

  const body: MessageCreateParamsStreaming = { model, max_tokens: maxTokens, messages, stream: true };
  if (system.length > 0) body.system = system;
  if (thinking !== undefined) body.thinking = thinking;
  if (effort !== undefined) body.thinking = { type: 'adaptive' };
  const thinkingOn = body.thinking?.type === 'enabled' || body.thinking?.type === 'adaptive';

  let functionTools: Tool[] = request.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: tool.parameters as Tool['input_schema'],
  }));
  let toolChoice = request.toolChoice === undefined ? undefined : toToolChoice(request.toolChoice);
  // Anthropic rejects a forced tool choice (`any` or `tool`) while thinking is on: keep thinking and let the
  // model choose (`auto`), offering only the named tool when one was forced.
  if (thinkingOn && (toolChoice?.type === 'any' || toolChoice?.type === 'tool')) {
    if (toolChoice.type === 'tool') {
      const name = toolChoice.name;
      functionTools = functionTools.filter((tool) => tool.name === name);
    }
    toolChoice = { type: 'auto' };
  }
  const tools: ToolUnion[] = [...functionTools, ...settings.serverTools.map((tool) => ({ ...tool }))];
  if (tools.length > 0) {
    body.tools = tools;
    if (toolChoice !== undefined) body.tool_choice = toolChoice;
  }
  if (overrides.stopSequences !== undefined && overrides.stopSequences.length > 0) {
    body.stop_sequences = overrides.stopSequences;
  }
  if (effort !== undefined || request.responseFormat !== undefined) {
    body.output_config = {
      ...(effort === undefined ? {} : { effort }),
      ...(request.responseFormat === undefined
        ? {}
        : { format: { type: 'json_schema', schema: toOutputSchema(request.responseFormat.schema) } }),
    };
  }
  const container = latestContainer(request.messages, settings.providerId);
  if (container !== undefined) body.container = container;
  if (settings.mcpServers.length > 0) {
    (body as unknown as Record<string, unknown>).mcp_servers = settings.mcpServers.map((server) => ({
      ...server,
    }));
  }

  const providerOptions = settings.providerOptions ?? {};
  const promptCache = providerOptions.promptCache ?? settings.promptCache;
  if (typeof promptCache !== 'boolean') {
    throw new LunationError(
      'invalid-argument',
      'providerOptions.anthropic.promptCache must be true or false',
    );
  }
  if (promptCache) addCacheBreakpoints(system, tools, messages);

  const extraBody = providerOptions.extraBody;
  if (extraBody !== undefined) {
    if (!isPlainObject(extraBody)) {
      throw new LunationError(
        'invalid-argument',
        'providerOptions.anthropic.extraBody must be a JSON object of Messages API body fields',
      );
    }
    const { n, ...fields } = extraBody;
    checkCandidateCount(n ?? providerOptions.n);
    deepMerge(body as unknown as Record<string, unknown>, fields);
  } else {
    checkCandidateCount(providerOptions.n);
  }
  return body;
}

/**
 * The Messages API has no `n`: one call gives one answer. `n: 1` is accepted (and not sent); more is refused
 * before anything is sent.
 */
function checkCandidateCount(n: JsonValue | undefined): void {
  if (n === undefined || n === 1) return;
  throw new LunationError(
    'invalid-argument',
    `Anthropic's Messages API returns one answer per call, but n=${JSON.stringify(n)} was asked for; call the model once per answer instead.`,
    { details: { n } },
  );
}

/**
 * Merges `source` into `target`: objects are merged key by key (recursively), anything else (arrays
 * included) replaces the target's value, and `null` removes the key.
 */
export function deepMerge(target: Record<string, unknown>, source: Record<string, JsonValue>): void {
  for (const [key, value] of Object.entries(source)) {
    const current = target[key];
    if (value === null) delete target[key];
    else if (isPlainObject(value) && isPlainObject(current)) deepMerge(current, value);
    else target[key] = structuredClone(value);
  }
}

function isPlainObject(value: unknown): value is Record<string, JsonValue> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The code-execution container of the latest answer that has one and has not expired. */
function latestContainer(messages: readonly Message[], providerId: string): string | undefined {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index]!;
    if (message.role !== 'assistant') continue;
    const container = message.providerMetadata?.[providerId]?.container;
    if (!isPlainObject(container) || typeof container.id !== 'string') continue;
    const expiresAt =
      typeof container.expires_at === 'string' ? Date.parse(container.expires_at) : Number.NaN;
    return Number.isNaN(expiresAt) || expiresAt > Date.now() ? container.id : undefined;
  }
  return undefined;
}

function toBlocks(message: Exclude<Message, { role: 'system' }>, providerId: string): ContentBlockParam[] {
  switch (message.role) {
    case 'user':
      return message.content.flatMap((part): ContentBlockParam[] => {
        if (part.type === 'image') return [{ type: 'image', source: imageSource(part) }];
        return part.text === '' ? [] : [{ type: 'text', text: part.text }];
      });
    case 'assistant':
      return assistantBlocks(message, providerId);
    case 'tool':
      return message.content.map((part) => {
        const text = toolResultText(part.result);
        return {
          type: 'tool_result',
          tool_use_id: part.toolCallId,
          ...(text === '' ? {} : { content: text }),
          ...(part.result.status === 'error' ? { is_error: true } : {}),
        };
      });
  }
}

/**
 * Signed thinking goes back as-is; reasoning without a signature (e.g. from another provider) cannot and is
 * dropped. Text keeps its citations; this provider's content blocks (server tool calls and results) go back
 * verbatim, other providers' are dropped; refusals are not sent back.
 */
function assistantBlocks(message: AssistantMessage, providerId: string): ContentBlockParam[] {
  const blocks: ContentBlockParam[] = [];
  for (const part of message.content) {
    if (part.type === 'reasoning') {
      if (part.redacted) blocks.push({ type: 'redacted_thinking', data: part.text });
      else if (part.signature !== undefined)
        blocks.push({ type: 'thinking', thinking: part.text, signature: part.signature });
    } else if (part.type === 'text') {
      const citations = part.providerMetadata?.[providerId]?.citations;
      if (Array.isArray(citations) && citations.length > 0) {
        blocks.push({ type: 'text', text: part.text, citations } as unknown as TextBlockParam);
      } else if (part.text !== '') {
        blocks.push({ type: 'text', text: part.text });
      }
    } else if (part.type === 'tool-call') {
      const caller = part.providerMetadata?.[providerId]?.caller;
      blocks.push({
        type: 'tool_use',
        id: part.toolCallId,
        name: part.toolName,
        input: parseArguments(part.arguments),
        ...(isPlainObject(caller) ? { caller: caller as never } : {}),
      });
    } else if (part.type === 'provider-content') {
      if (part.provider === providerId)
        blocks.push(structuredClone(part.value) as unknown as ContentBlockParam);
    }
  }
  return blocks;
}

/** The API wants an object; arguments that are not a JSON object are sent as `{}`. */
function parseArguments(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

function imageSource(part: ImagePart): ImageBlockParam['source'] {
  const { source } = part;
  if (source.type === 'url') return { type: 'url', url: source.url };
  return {
    type: 'base64',
    media_type: source.mediaType as Base64ImageSource['media_type'],
    data: source.data,
  };
}

function toToolChoice(choice: ToolChoice): AnthropicToolChoice {
  switch (choice) {
    case 'auto':
      return { type: 'auto' };
    case 'none':
      return { type: 'none' };
    case 'required':
      return { type: 'any' };
    default:
      return { type: 'tool', name: choice.toolName };
  }
}

/**
 * Claude 4.6 and later take `thinking: { type: 'adaptive' }` with `output_config.effort`; the Claude 5
 * family rejects token budgets. Ids without a version (custom deployments) keep budgets.
 */
export function usesAdaptiveThinking(model: string): boolean {
  if (/^claude-mythos-preview/.test(model)) return true;
  const numbers = model
    .replace(/-\d{8}$/, '')
    .split(/[-@.]/)
    .filter((token) => /^\d{1,2}$/.test(token))
    .map(Number);
  const [major, minor = 0] = numbers;
  if (!model.includes('claude') || major === undefined) return false;
  return major > 4 || (major === 4 && minor >= 6);
}

/** Named efforts map to `thinkingBudgets`; a token budget is used as-is (at least 1024, the API's minimum). */
function toBudgetThinking(effort: ReasoningEffort | undefined): ThinkingConfigParam | undefined {
  if (effort === undefined) return undefined;
  if (effort === 'none') return { type: 'disabled' };
  const budget = typeof effort === 'string' ? thinkingBudgets[effort] : Math.max(1_024, effort.budgetTokens);
  return { type: 'enabled', budget_tokens: budget };
}

/** `none` leaves thinking to the model's default: some adaptive-only models reject `disabled`. */
function toEffort(effort: ReasoningEffort | undefined): 'low' | 'medium' | 'high' | undefined {
  if (effort === undefined || effort === 'none') return undefined;
  if (effort === 'minimal' || effort === 'low') return 'low';
  if (effort === 'medium' || effort === 'high') return effort;
  if (effort.budgetTokens < 4_096) return 'low';
  return effort.budgetTokens < 16_384 ? 'medium' : 'high';
}

/** Breakpoints on the system prompt, the last tool and the last cacheable block of the last message. */
function addCacheBreakpoints(
  system: TextBlockParam[],
  tools: ToolUnion[],
  messages: UserOrAssistant[],
): void {
  const cacheControl = { type: 'ephemeral' } as const;
  const lastSystem = system.at(-1);
  if (lastSystem) lastSystem.cache_control = cacheControl;
  const lastTool = tools.at(-1);
  if (lastTool) (lastTool as { cache_control?: typeof cacheControl }).cache_control = cacheControl;
  const lastMessage = messages.at(-1);
  if (lastMessage === undefined) return;
  const blocks = lastMessage.content as ContentBlockParam[];
  for (let index = blocks.length - 1; index >= 0; index--) {
    const block = blocks[index]!;
    if (block.type !== 'thinking' && block.type !== 'redacted_thinking') {
      (block as { cache_control?: typeof cacheControl }).cache_control = cacheControl;
      return;
    }
  }
}
