import type {
  ErrorCode,
  JsonObject,
  LunationError,
  ModelStreamPart,
  StopReason,
  Usage,
} from '@lunation/contract';
import {
  errorCodeForErrorType,
  type ProviderLabel,
  providerError,
  streamInterruptedError,
} from '@lunation/contract/provider-utils';
import type {
  Response,
  ResponseOutputItem,
  ResponseStreamEvent,
  ResponseUsage,
} from 'openai/resources/responses/responses';
import { cutOffCallError } from './cut-off-call-error.js';
import { approvalArguments, mcpApprovalTool } from './mcp-approval.js';

type ItemState =
  | { kind: 'message'; id: string; text: boolean }
  | {
      kind: 'reasoning';
      id: string;
      /** The text of the summary part (or raw reasoning) streaming now. */
      text: string;
      /** Whether any reasoning text was streamed (else the finished item carries it whole). */
      streamed: boolean;
      source: 'summary' | 'content';
    }
  | {
      kind: 'function';
      id: string | undefined;
      callId: string;
      name: string;
      arguments: string;
      ended: boolean;
    }
  | { kind: 'other' };

/**
 * Turns Responses API stream events into contract parts. Output items arrive one after another (keyed by
 * `output_index`): a message's text and refusal deltas, a reasoning item's summary (or raw reasoning) deltas,
 * a function call's argument deltas; each item's `output_item.done` closes its block and carries the ids,
 * citations and encrypted reasoning kept in `providerMetadata[providerId]`. Each summary part of a reasoning
 * item is a reasoning block of its own. Items of hosted tools become `provider-content` parts, except an MCP
 * approval request, which is a call of {@link mcpApprovalTool}. `response.completed` / `response.incomplete`
 * end the stream (a function call an incomplete response cut off throws); `response.failed` and error events
 * throw.
 */
export async function* parseResponsesStream(
  events: AsyncIterable<ResponseStreamEvent>,
  label: ProviderLabel,
  providerId: string,
): AsyncGenerator<ModelStreamPart> {
  const items = new Map<number, ItemState>();
  let calls = 0;
  let refused = false;
  let answered = false;
  let responseId: string | undefined;

  for await (const event of events) {
    switch (event.type) {
      case 'response.created':
      case 'response.in_progress':
        responseId = event.response.id;
        break;
      case 'response.output_item.added': {
        const item = event.item;
        if (item.type === 'message')
          items.set(event.output_index, { kind: 'message', id: item.id, text: false });
        else if (item.type === 'reasoning') {
          items.set(event.output_index, {
            kind: 'reasoning',
            id: item.id,
            text: '',
            streamed: false,
            source: 'summary',
          });
        } else if (item.type === 'function_call') {
          const call: ItemState = {
            kind: 'function',
            id: item.id,
            callId: item.call_id,
            name: item.name,
            arguments: '',
            ended: false,
          };
          items.set(event.output_index, call);
          calls += 1;
          yield { type: 'tool-call-start', toolCallId: call.callId, toolName: call.name };
          if (item.arguments) {
            call.arguments = item.arguments;
            yield { type: 'tool-call-delta', toolCallId: call.callId, argumentsDelta: item.arguments };
          }
        } else items.set(event.output_index, { kind: 'other' });
        break;
      }
      case 'response.reasoning_summary_part.added': {
        // A new summary part: the one before it closes as a block of its own (sent back as its own part).
        const item = items.get(event.output_index);
        if (item?.kind === 'reasoning' && event.summary_index > 0 && item.text !== '') {
          item.text = '';
          yield {
            type: 'reasoning-delta',
            delta: '',
            providerMetadata: { [providerId]: { itemId: item.id } },
          };
        }
        break;
      }
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta': {
        const item = items.get(event.output_index);
        if (item?.kind !== 'reasoning' || event.delta === '') break;
        if (event.type === 'response.reasoning_text.delta') item.source = 'content';
        item.text += event.delta;
        item.streamed = true;
        yield { type: 'reasoning-delta', delta: event.delta };
        break;
      }
      case 'response.output_text.delta': {
        const item = items.get(event.output_index);
        if (item?.kind === 'message') item.text = true;
        if (event.delta !== '') {
          answered = true;
          yield { type: 'text-delta', delta: event.delta };
        }
        break;
      }
      case 'response.refusal.delta':
        if (event.delta !== '') {
          refused = true;
          yield { type: 'refusal-delta', delta: event.delta };
        }
        break;
      case 'response.function_call_arguments.delta': {
        const item = items.get(event.output_index);
        if (item?.kind !== 'function' || event.delta === '') break;
        item.arguments += event.delta;
        yield { type: 'tool-call-delta', toolCallId: item.callId, argumentsDelta: event.delta };
        break;
      }
      case 'response.output_item.done': {
        let state = items.get(event.output_index);
        if (event.item.type === 'mcp_approval_request') {
          calls += 1;
          yield* approvalCall(event.item, providerId);
          items.delete(event.output_index);
          break;
        }
        if (state === undefined && event.item.type === 'function_call') {
          // A call sent only whole.
          state = {
            kind: 'function',
            id: event.item.id,
            callId: event.item.call_id,
            name: event.item.name,
            arguments: '',
            ended: false,
          };
          calls += 1;
          yield { type: 'tool-call-start', toolCallId: state.callId, toolName: state.name };
        }
        yield* closeItem(state, event.item, providerId, label);
        items.delete(event.output_index);
        break;
      }
      case 'response.completed':
      case 'response.incomplete': {
        const response = event.response;
        for (const item of items.values()) {
          if (item.kind !== 'function' || item.ended) continue;
          if (event.type === 'response.incomplete')
            throw cutOffCallError(label, item, response.incomplete_details?.reason ?? 'max_output_tokens');
          yield* endCall(item, providerId);
        }
        yield usagePart(response);
        const { stopReason, rawStopReason } = stopReasonOf(response, calls > 0, refused && !answered);
        yield {
          type: 'finish',
          stopReason,
          rawStopReason,
          providerMetadata: { [providerId]: { responseId: response.id ?? responseId ?? null } },
        };
        return;
      }
      case 'response.failed':
        throw failedError(event.response, label);
      case 'error':
        throw providerError({
          label,
          code: responsesErrorCode(event.code ?? undefined, event.message),
          summary: `sent an error event inside the stream${event.code ? ` (${event.code})` : ''}`,
          apiMessage: event.message,
          vendorCode: event.code,
          cause: event,
        });
      default:
        break;
    }
  }
  throw streamInterruptedError(label, 'the response ended without response.completed');
}

function* closeItem(
  state: ItemState | undefined,
  item: ResponseOutputItem,
  providerId: string,
  label: ProviderLabel,
): Generator<ModelStreamPart> {
  if (state?.kind === 'message' && item.type === 'message') {
    const annotations = item.content.flatMap((part) => (part.type === 'output_text' ? part.annotations : []));
    const metadata: JsonObject = { itemId: item.id };
    if (annotations.length > 0) metadata.annotations = annotations as unknown as JsonObject[];
    if (!state.text) {
      // Text that came only whole (no deltas).
      const text = item.content.flatMap((part) => (part.type === 'output_text' ? [part.text] : [])).join('');
      if (text === '') return;
      yield { type: 'text-delta', delta: text, providerMetadata: { [providerId]: metadata } };
      return;
    }
    yield { type: 'text-delta', delta: '', providerMetadata: { [providerId]: metadata } };
  } else if (state?.kind === 'reasoning' && item.type === 'reasoning') {
    const metadata: JsonObject = { itemId: item.id };
    if (item.encrypted_content) metadata.encryptedContent = item.encrypted_content;
    let delta = '';
    if (!state.streamed) {
      // Reasoning that came only whole: each summary part a block of its own (or the raw reasoning text).
      const summaries = item.summary.map((part) => part.text).filter((text) => text !== '');
      if (summaries.length > 0) {
        for (const text of summaries.slice(0, -1)) {
          yield {
            type: 'reasoning-delta',
            delta: text,
            providerMetadata: { [providerId]: { itemId: item.id } },
          };
        }
        delta = summaries.at(-1)!;
      } else {
        delta = (item.content?.map((part) => part.text) ?? []).join('\n\n');
        if (delta !== '') state.source = 'content';
      }
    }
    if (state.source === 'content') metadata.reasoningSource = 'content';
    yield { type: 'reasoning-delta', delta, providerMetadata: { [providerId]: metadata } };
  } else if (state?.kind === 'function' && item.type === 'function_call') {
    if (item.status === 'incomplete') throw cutOffCallError(label, state, 'max_output_tokens');
    if (state.arguments === '' && item.arguments) {
      state.arguments = item.arguments;
      yield { type: 'tool-call-delta', toolCallId: state.callId, argumentsDelta: item.arguments };
    }
    state.id = item.id ?? state.id;
    yield* endCall(state, providerId);
  } else if (state?.kind !== 'function' && item.type !== 'message' && item.type !== 'reasoning') {
    yield {
      type: 'provider-content',
      provider: providerId,
      kind: item.type,
      value: item as unknown as JsonObject,
    };
  }
}

function* endCall(
  call: Extract<ItemState, { kind: 'function' }>,
  providerId: string,
): Generator<ModelStreamPart> {
  call.ended = true;
  if (call.arguments === '') {
    call.arguments = '{}';
    yield { type: 'tool-call-delta', toolCallId: call.callId, argumentsDelta: '{}' };
  }
  yield {
    type: 'tool-call-end',
    toolCallId: call.callId,
    toolName: call.name,
    arguments: call.arguments,
    ...(call.id === undefined ? {} : { providerMetadata: { [providerId]: { itemId: call.id } } }),
  };
}

/**
 * An MCP approval request as a whole call of {@link mcpApprovalTool}: its id is the call id, and the request item
 * is kept in the call's metadata so the next request can send it back before its `mcp_approval_response`.
 */
function* approvalCall(
  item: Extract<ResponseOutputItem, { type: 'mcp_approval_request' }>,
  providerId: string,
): Generator<ModelStreamPart> {
  const toolName = mcpApprovalTool.name;
  const args = approvalArguments(item);
  yield { type: 'tool-call-start', toolCallId: item.id, toolName };
  yield { type: 'tool-call-delta', toolCallId: item.id, argumentsDelta: args };
  yield {
    type: 'tool-call-end',
    toolCallId: item.id,
    toolName,
    arguments: args,
    providerMetadata: {
      [providerId]: { itemId: item.id, mcpApprovalRequest: item as unknown as JsonObject },
    },
  };
}

/**
 * The usage part. A response without usage, or an incomplete one reporting all zeros (a placeholder, not a
 * count: no call reads zero input tokens), is `unknown`.
 */
function usagePart(response: Response): ModelStreamPart {
  const usage = toResponsesUsage(response.usage ?? undefined);
  const unknown =
    response.usage == null ||
    (response.status === 'incomplete' && usage.inputTokens === 0 && usage.outputTokens === 0);
  return unknown ? { type: 'usage', usage, unknown: true } : { type: 'usage', usage };
}

/** Responses usage already has cache reads ⊆ input and reasoning ⊆ output. */
export function toResponsesUsage(usage: ResponseUsage | undefined): Usage {
  const details = usage?.input_tokens_details as Partial<ResponseUsage.InputTokensDetails> | undefined;
  return {
    inputTokens: usage?.input_tokens ?? 0,
    outputTokens: usage?.output_tokens ?? 0,
    cacheReadTokens: details?.cached_tokens ?? 0,
    cacheWriteTokens: details?.cache_write_tokens ?? 0,
    reasoningTokens: usage?.output_tokens_details?.reasoning_tokens ?? 0,
  };
}

function stopReasonOf(
  response: Response,
  calledTools: boolean,
  onlyRefused: boolean,
): { stopReason: StopReason; rawStopReason: string } {
  if (response.status === 'incomplete') {
    const reason = response.incomplete_details?.reason;
    return {
      stopReason: reason === 'content_filter' ? 'content-filter' : 'max-tokens',
      rawStopReason: `incomplete:${reason ?? 'unknown'}`,
    };
  }
  const rawStopReason = response.status ?? 'completed';
  if (calledTools) return { stopReason: 'tool-use', rawStopReason };
  return { stopReason: onlyRefused ? 'refusal' : 'end-turn', rawStopReason };
}

function failedError(response: Response, label: ProviderLabel): LunationError {
  const error = response.error;
  const code = error?.code ?? undefined;
  return providerError({
    label,
    code: responsesErrorCode(code, error?.message ?? ''),
    summary: `failed the response (response.failed${code ? `, ${code}` : ''})`,
    apiMessage: error?.message,
    vendorCode: code,
    cause: response,
  });
}

/**
 * The error code for a Responses API error `code` (`response.failed`, error events): the prompt and image
 * problems it names are the caller's to fix; anything else goes by the shared vendor table.
 */
export function responsesErrorCode(code: string | undefined, message: string): ErrorCode {
  if (code === undefined) return errorCodeForErrorType(undefined, message);
  if (code === 'vector_store_timeout') return 'timeout';
  if (
    code === 'invalid_prompt' ||
    code === 'bio_policy' ||
    code === 'data_residency_mismatch' ||
    /image/.test(code)
  ) {
    return errorCodeForErrorType('invalid_request_error', message);
  }
  return errorCodeForErrorType(code, message);
}
