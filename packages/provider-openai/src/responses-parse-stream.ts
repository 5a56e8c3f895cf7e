import {
  type ErrorCode,
  errorCodeForErrorType,
  type JsonObject,
  type LunationError,
  type ModelStreamPart,
  type ProviderLabel,
  providerError,
  type StopReason,
  streamInterruptedError,
  type Usage,
} from '@lunation/contract';
import type {
  Response,
  ResponseOutputItem,
  ResponseStreamEvent,
  ResponseUsage,
} from 'openai/resources/responses/responses';

type ItemState =
  | { kind: 'message'; id: string; text: boolean }
  | { kind: 'reasoning'; id: string; text: string; source: 'summary' | 'content' }
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
 * a function call's argument deltas; each item's `output_item.done` closes its block and carries the ids and
 * encrypted reasoning kept in `providerMetadata[providerId]`. Items of hosted tools become `provider-content`
 * parts. `response.completed` / `response.incomplete` end the stream; `response.failed` and error events throw.
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
          items.set(event.output_index, { kind: 'reasoning', id: item.id, text: '', source: 'summary' });
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
        const item = items.get(event.output_index);
        if (item?.kind === 'reasoning' && event.summary_index > 0 && item.text !== '') {
          item.text += '\n\n';
          yield { type: 'reasoning-delta', delta: '\n\n' };
        }
        break;
      }
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta': {
        const item = items.get(event.output_index);
        if (item?.kind !== 'reasoning' || event.delta === '') break;
        if (event.type === 'response.reasoning_text.delta') item.source = 'content';
        item.text += event.delta;
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
        yield* closeItem(state, event.item, providerId);
        items.delete(event.output_index);
        break;
      }
      case 'response.completed':
      case 'response.incomplete': {
        for (const item of items.values()) {
          if (item.kind === 'function' && !item.ended) yield* endCall(item, providerId);
        }
        const response = event.response;
        yield { type: 'usage', usage: toResponsesUsage(response.usage) };
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
): Generator<ModelStreamPart> {
  if (state?.kind === 'message' && item.type === 'message') {
    if (!state.text) {
      // Text that came only whole (no deltas).
      const text = item.content.flatMap((part) => (part.type === 'output_text' ? [part.text] : [])).join('');
      if (text === '') return;
      yield { type: 'text-delta', delta: text, providerMetadata: { [providerId]: { itemId: item.id } } };
      return;
    }
    const annotations = item.content.flatMap((part) => (part.type === 'output_text' ? part.annotations : []));
    const metadata: JsonObject = { itemId: item.id };
    if (annotations.length > 0) metadata.annotations = annotations as unknown as JsonObject[];
    yield { type: 'text-delta', delta: '', providerMetadata: { [providerId]: metadata } };
  } else if (state?.kind === 'reasoning' && item.type === 'reasoning') {
    let delta = '';
    if (state.text === '') {
      // Reasoning that came only whole: the summary parts (or raw reasoning text) of the finished item.
      const content = item.content?.map((part) => part.text) ?? [];
      delta = item.summary.map((part) => part.text).join('\n\n') || content.join('\n\n');
      if (delta !== '' && item.summary.length === 0) state.source = 'content';
    }
    const metadata: JsonObject = { itemId: item.id };
    if (item.encrypted_content) metadata.encryptedContent = item.encrypted_content;
    if (state.source === 'content') metadata.reasoningSource = 'content';
    yield { type: 'reasoning-delta', delta, providerMetadata: { [providerId]: metadata } };
  } else if (state?.kind === 'function' && item.type === 'function_call') {
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
