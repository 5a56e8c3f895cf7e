import {
  type AssistantMessage,
  type ImagePart,
  type JsonObject,
  LunationError,
  type Message,
  type ModelRequest,
  type ProviderMetadata,
  type ResponseFormat,
  type ToolChoice,
  toolResultText,
  type UserMessage,
} from '@lunation/contract';
import type {
  ResponseCreateParamsStreaming,
  ResponseFormatTextJSONSchemaConfig,
  ResponseInputContent,
  ResponseInputItem,
  ResponseReasoningItem,
  Tool,
} from 'openai/resources/responses/responses';
import { toReasoningEffort } from './build-request.js';
import { approvalResponse, mcpApprovalTool } from './mcp-approval.js';
import { mergeExtraBody } from './merge-extra-body.js';
import { type StrictSchemas, strictFor } from './strict-schema.js';

/** A Responses API tool that runs on OpenAI's side (web search, file search, code interpreter, MCP, ...). */
export type OpenAIHostedTool = Exclude<Tool, { type: 'function' }>;

/** Whether reasoning summaries are asked for, and how long. */
export type ReasoningSummary = 'auto' | 'concise' | 'detailed';

export interface ResponsesRequestSettings {
  model: string;
  /** The key of `providerOptions` and of `providerMetadata` on parts. */
  providerId: string;
  store: boolean;
  /** Asks for `reasoning.encrypted_content` and sends `reasoning` settings. */
  reasoningModel: boolean;
  includeEncryptedReasoning: boolean;
  reasoningSummary: ReasoningSummary | null;
  strictSchemas: StrictSchemas;
  hostedTools: readonly OpenAIHostedTool[];
}

/** What the adapter keeps under `providerMetadata[providerId]` of the parts it produces. */
export interface OpenAIItemMetadata {
  /** The output item's id (`msg_…`, `rs_…`, `fc_…`). */
  itemId?: string;
  /** A reasoning item's `encrypted_content`, sent back when `store` is false. */
  encryptedContent?: string;
  /** `content` when the reasoning came as raw reasoning text rather than a summary. */
  reasoningSource?: 'summary' | 'content';
  /** A message's citations (`annotations` of its output text), sent back with the text. */
  annotations?: JsonObject[];
  /** On a call of `mcpApprovalTool`: the `mcp_approval_request` item it came as. */
  mcpApprovalRequest?: JsonObject;
}

/** The Responses API streaming body for a contract request. */
export function buildResponsesRequest(
  request: ModelRequest,
  settings: ResponsesRequestSettings,
): ResponseCreateParamsStreaming {
  const overrides = request.overrides ?? {};
  if (overrides.stopSequences !== undefined && overrides.stopSequences.length > 0) {
    throw new LunationError(
      'invalid-argument',
      'The OpenAI Responses API has no stop sequences; remove `overrides.stopSequences` or use OpenAIModel (Chat Completions), which sends them as `stop`.',
    );
  }
  const approvals = new Set<string>();
  const body: ResponseCreateParamsStreaming = {
    model: overrides.model ?? settings.model,
    input: request.messages.flatMap((message) => toInputItems(message, settings.providerId, approvals)),
    stream: true,
    store: settings.store,
  };
  // The approval tool stands for OpenAI's MCP approval requests; the model must not call it itself.
  const functionTools = request.tools.filter((tool) => tool.name !== mcpApprovalTool.name);
  const tools: Tool[] = functionTools.map((tool) => ({
    type: 'function',
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    strict: strictFor(tool.parameters, settings.strictSchemas),
  }));
  tools.push(...settings.hostedTools);
  if (tools.length > 0) {
    body.tools = tools;
    if (request.toolChoice !== undefined) body.tool_choice = toToolChoice(request.toolChoice);
  }
  if (overrides.temperature !== undefined) body.temperature = overrides.temperature;
  if (overrides.topP !== undefined) body.top_p = overrides.topP;
  if (overrides.maxTokens !== undefined) body.max_output_tokens = overrides.maxTokens;
  if (settings.reasoningModel || overrides.reasoningEffort !== undefined) {
    body.reasoning = {
      ...(overrides.reasoningEffort === undefined
        ? {}
        : { effort: toReasoningEffort(overrides.reasoningEffort) }),
      ...(settings.reasoningSummary === null ? {} : { summary: settings.reasoningSummary }),
    };
    if (settings.includeEncryptedReasoning) body.include = ['reasoning.encrypted_content'];
  }
  if (request.responseFormat !== undefined) {
    body.text = { format: toTextFormat(request.responseFormat, settings.strictSchemas) };
  }
  const providerOptions = request.providerOptions?.[settings.providerId] as JsonObject | undefined;
  return mergeExtraBody(body, providerOptions?.extraBody, settings.providerId);
}

/** `text.format: { type: 'json_schema' }` (Structured Outputs). */
export function toTextFormat(
  format: ResponseFormat,
  strictSchemas: StrictSchemas,
): ResponseFormatTextJSONSchemaConfig {
  return {
    type: 'json_schema',
    name: format.name ?? 'output',
    ...(format.description === undefined ? {} : { description: format.description }),
    schema: format.schema,
    strict: strictFor(format.schema, strictSchemas),
  };
}

/** `approvals` collects the ids of MCP approval requests, whose results go back as approval responses. */
function toInputItems(message: Message, providerId: string, approvals: Set<string>): ResponseInputItem[] {
  switch (message.role) {
    case 'system':
      return [{ role: 'system', content: message.content.map((part) => part.text).join('\n\n') }];
    case 'user':
      return [{ role: 'user', content: userContent(message) }];
    case 'assistant':
      return assistantItems(message, providerId, approvals);
    case 'tool':
      return message.content.map((part) =>
        approvals.has(part.toolCallId)
          ? (approvalResponse(part.toolCallId, part.result) as unknown as ResponseInputItem)
          : {
              type: 'function_call_output',
              call_id: part.toolCallId,
              output: toolResultText(part.result),
            },
      );
  }
}

function userContent(message: UserMessage): string | ResponseInputContent[] {
  if (message.content.length === 1 && message.content[0]!.type === 'text') return message.content[0]!.text;
  return message.content.map((part) =>
    part.type === 'text'
      ? { type: 'input_text', text: part.text }
      : { type: 'input_image', image_url: imageUrl(part), detail: 'auto' },
  );
}

function imageUrl(part: ImagePart): string {
  const { source } = part;
  return source.type === 'url' ? source.url : `data:${source.mediaType};base64,${source.data}`;
}

type OutputContent =
  | { type: 'output_text'; text: string; annotations: JsonObject[] }
  | { type: 'refusal'; refusal: string };

/**
 * The assistant's parts as output items, in order: text (with its citations) and refusals as message items
 * (one per message item id), reasoning this provider produced as reasoning items with their encrypted content
 * (consecutive parts of one item as its summary parts), tool calls as `function_call` items (calls of the MCP
 * approval tool as the `mcp_approval_request` items they came as), and this provider's `provider-content` parts
 * as the items they came as. Reasoning and blocks of other providers have no equivalent and are left out.
 */
function assistantItems(
  message: AssistantMessage,
  providerId: string,
  approvals: Set<string>,
): ResponseInputItem[] {
  const items: ResponseInputItem[] = [];
  let pending: OutputContent[] = [];
  const flush = (id: string | undefined) => {
    if (pending.length === 0) return;
    items.push(
      id === undefined
        ? // An assistant message without an item id: the API takes output content under role `assistant`.
          ({ role: 'assistant', content: pending } as unknown as ResponseInputItem)
        : { type: 'message', role: 'assistant', id, status: 'completed', content: pending as never },
    );
    pending = [];
  };
  for (const part of message.content) {
    switch (part.type) {
      case 'text': {
        const metadata = itemMetadata(part.providerMetadata, providerId);
        if (part.text !== '')
          pending.push({ type: 'output_text', text: part.text, annotations: metadata.annotations ?? [] });
        if (metadata.itemId !== undefined) flush(metadata.itemId);
        break;
      }
      case 'refusal':
        pending.push({ type: 'refusal', refusal: part.text });
        break;
      case 'reasoning': {
        flush(undefined);
        const metadata = itemMetadata(part.providerMetadata, providerId);
        if (metadata.itemId === undefined || part.redacted) break;
        // The summary parts of one reasoning item arrive as consecutive parts with its id: one item again.
        const last = items.at(-1) as ResponseReasoningItem | undefined;
        const sameItem = last?.type === 'reasoning' && last.id === metadata.itemId;
        const reasoning: ResponseReasoningItem = sameItem
          ? last
          : { type: 'reasoning', id: metadata.itemId, summary: [] };
        if (part.text !== '') {
          if (metadata.reasoningSource === 'content')
            reasoning.content = [...(reasoning.content ?? []), { type: 'reasoning_text', text: part.text }];
          else reasoning.summary = [...reasoning.summary, { type: 'summary_text', text: part.text }];
        }
        if (metadata.encryptedContent !== undefined) reasoning.encrypted_content = metadata.encryptedContent;
        if (!sameItem) items.push(reasoning);
        break;
      }
      case 'tool-call': {
        flush(undefined);
        const { itemId: id, mcpApprovalRequest } = itemMetadata(part.providerMetadata, providerId);
        if (mcpApprovalRequest !== undefined) {
          approvals.add(part.toolCallId);
          items.push(mcpApprovalRequest as unknown as ResponseInputItem);
          break;
        }
        items.push({
          type: 'function_call',
          call_id: part.toolCallId,
          name: part.toolName,
          arguments: part.arguments,
          ...(id === undefined ? {} : { id }),
        });
        break;
      }
      case 'provider-content':
        flush(undefined);
        if (part.provider === providerId) items.push(part.value as unknown as ResponseInputItem);
        break;
    }
  }
  flush(undefined);
  return items;
}

function itemMetadata(metadata: ProviderMetadata | undefined, providerId: string): OpenAIItemMetadata {
  const own = metadata?.[providerId];
  if (own === undefined) return {};
  return {
    ...(typeof own.itemId === 'string' ? { itemId: own.itemId } : {}),
    ...(typeof own.encryptedContent === 'string' ? { encryptedContent: own.encryptedContent } : {}),
    ...(own.reasoningSource === 'content' ? { reasoningSource: 'content' as const } : {}),
    ...(Array.isArray(own.annotations) ? { annotations: own.annotations as JsonObject[] } : {}),
    ...(isObject(own.mcpApprovalRequest) ? { mcpApprovalRequest: own.mcpApprovalRequest } : {}),
  };
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function toToolChoice(choice: ToolChoice): NonNullable<ResponseCreateParamsStreaming['tool_choice']> {
  if (typeof choice === 'string') return choice;
  return { type: 'function', name: choice.toolName };
}
