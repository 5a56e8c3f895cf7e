import type { RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import {
  emptyUsage,
  type JsonObject,
  LunationError,
  type ModelStreamPart,
  type StopReason,
  type Usage,
} from '@lunation/contract';
import { type ProviderLabel, streamInterruptedError } from '@lunation/contract/provider-utils';

type BlockState =
  | { kind: 'text'; citations: JsonObject[] | undefined }
  | { kind: 'thinking'; signature: string | undefined; signatureSent: boolean }
  | {
      kind: 'tool';
      id: string;
      name: string;
      arguments: string;
      input: unknown;
      caller: JsonObject | undefined;
      ended: boolean;
    }
  /** A block only Anthropic understands (server tool call or result, MCP call or result, ...). */
  | { kind: 'provider'; value: JsonObject; inputJson: string | undefined }
  | { kind: 'other' };

interface WireUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  output_tokens_details?: { thinking_tokens?: number | null } | null;
}

/** What one response (one HTTP stream) ended with. */
export interface SegmentOutcome {
  stopReason: string | null;
  /** `stop_details` (refusals), as sent. */
  stopDetails: JsonObject | null;
  /** The code-execution container, as sent. */
  container: JsonObject | null;
  usage: Usage;
}

/** State that lives across the responses of one answer (a turn continued after `pause_turn`). */
export interface ParseState {
  /** The last block streamed was text without citations, still open for the consumer. */
  openUncitedText: boolean;
}

/**
 * Turns one Messages API event stream into contract content parts (no `usage` / `finish`: the caller adds them
 * once per answer) and returns how the response ended. The response counts as complete only once
 * `message_stop` arrived; `ping` and unknown events are ignored.
 *
 * A valid stream has one `message_start`; intermediaries break that in two ways. A gateway that repeats the
 * frame of the same message (same id) is ignored. One that lost its upstream and splices a retried generation
 * into the body (a `message_start` with another id) replaces the cut-off generation when nothing of it was
 * streamed yet; once parts were streamed they cannot be taken back, so the stream fails (`stream-interrupted`,
 * not retried) rather than merging two generations into one answer.
 */
export async function* parseStream(
  events: AsyncIterable<RawMessageStreamEvent>,
  label: ProviderLabel,
  providerId: string,
  state: ParseState,
): AsyncGenerator<ModelStreamPart, SegmentOutcome> {
  // Whether a part left this stream yet: once one did, a spliced generation cannot replace the first.
  const progress = { streamed: false };
  const parts = parseEvents(events, label, providerId, state, progress);
  try {
    for (;;) {
      const next = await parts.next();
      if (next.done) return next.value;
      progress.streamed = true;
      yield next.value;
    }
  } finally {
    await parts.return(undefined as never);
  }
}

async function* parseEvents(
  events: AsyncIterable<RawMessageStreamEvent>,
  label: ProviderLabel,
  providerId: string,
  state: ParseState,
  progress: { readonly streamed: boolean },
): AsyncGenerator<ModelStreamPart, SegmentOutcome> {
  const blocks = new Map<number, BlockState>();
  let usage: WireUsage = {};
  let stopReason: string | null = null;
  let stopDetails: JsonObject | null = null;
  let container: JsonObject | null = null;
  let messageId: string | undefined;
  let stopped = false;
  const initialState = { ...state };

  for await (const event of events) {
    switch (event.type) {
      case 'message_start': {
        const id = event.message.id;
        if (messageId !== undefined) {
          if (id === messageId) break;
          if (progress.streamed) throw splicedMessageStart(label, id, messageId);
          // Nothing of the cut-off generation was streamed: start over with the new one.
          blocks.clear();
          usage = {};
          stopReason = null;
          stopDetails = null;
          container = null;
          stopped = false;
          Object.assign(state, initialState);
        }
        messageId = id;
        mergeUsage(usage, event.message.usage);
        break;
      }
      case 'content_block_start': {
        const block = event.content_block as unknown as JsonObject & { type: string };
        if (block.type === 'text') {
          const cited = Array.isArray(block.citations);
          // A new text block: close an uncited one the consumer still holds open, so the two stay apart.
          if (state.openUncitedText) yield closeText(providerId);
          state.openUncitedText = false;
          blocks.set(event.index, { kind: 'text', citations: cited ? [] : undefined });
          if (typeof block.text === 'string' && block.text) {
            state.openUncitedText = !cited;
            yield { type: 'text-delta', delta: block.text };
          }
          break;
        }
        state.openUncitedText = false;
        if (block.type === 'thinking') {
          const signature =
            typeof block.signature === 'string' && block.signature ? block.signature : undefined;
          blocks.set(event.index, { kind: 'thinking', signature, signatureSent: false });
          if (typeof block.thinking === 'string' && block.thinking)
            yield { type: 'reasoning-delta', delta: block.thinking };
        } else if (block.type === 'redacted_thinking') {
          blocks.set(event.index, { kind: 'other' });
          yield { type: 'reasoning-delta', delta: String(block.data ?? ''), redacted: true };
        } else if (block.type === 'tool_use') {
          const id = String(block.id);
          const name = String(block.name);
          const caller =
            isObject(block.caller) && block.caller.type !== 'direct'
              ? (block.caller as JsonObject)
              : undefined;
          blocks.set(event.index, {
            kind: 'tool',
            id,
            name,
            arguments: '',
            input: block.input,
            caller,
            ended: false,
          });
          yield { type: 'tool-call-start', toolCallId: id, toolName: name };
        } else {
          // server_tool_use, web_search_tool_result, code_execution_tool_result, mcp_tool_use, ...: kept whole.
          const streamsInput = isObject(block.input) && Object.keys(block.input).length === 0;
          blocks.set(event.index, {
            kind: 'provider',
            value: block,
            inputJson: streamsInput ? '' : undefined,
          });
        }
        break;
      }
      case 'content_block_delta': {
        const block = blocks.get(event.index);
        const delta = event.delta;
        if (delta.type === 'text_delta') {
          if (delta.text) {
            if (block?.kind === 'text' && block.citations === undefined) state.openUncitedText = true;
            yield { type: 'text-delta', delta: delta.text };
          }
        } else if (delta.type === 'citations_delta') {
          if (block?.kind === 'text') {
            block.citations ??= [];
            block.citations.push(delta.citation as unknown as JsonObject);
          }
        } else if (delta.type === 'thinking_delta') {
          if (delta.thinking) yield { type: 'reasoning-delta', delta: delta.thinking };
        } else if (delta.type === 'signature_delta') {
          if (block?.kind === 'thinking') block.signatureSent = true;
          yield { type: 'reasoning-delta', delta: '', signature: delta.signature };
        } else if (delta.type === 'input_json_delta') {
          if (block?.kind === 'tool' && delta.partial_json) {
            block.arguments += delta.partial_json;
            yield { type: 'tool-call-delta', toolCallId: block.id, argumentsDelta: delta.partial_json };
          } else if (block?.kind === 'provider' && block.inputJson !== undefined) {
            block.inputJson += delta.partial_json;
          }
        }
        break;
      }
      case 'content_block_stop': {
        const block = blocks.get(event.index);
        if (block?.kind === 'thinking' && !block.signatureSent && block.signature !== undefined) {
          block.signatureSent = true;
          yield { type: 'reasoning-delta', delta: '', signature: block.signature };
        } else if (block?.kind === 'tool') {
          yield* endToolCall(block, providerId);
        } else if (block?.kind === 'text' && block.citations !== undefined) {
          // The citations belong to the whole block: they close it.
          yield {
            type: 'text-delta',
            delta: '',
            providerMetadata: { [providerId]: { citations: block.citations } },
          };
        } else if (block?.kind === 'provider') {
          yield providerContent(block, providerId, label);
        }
        blocks.delete(event.index);
        break;
      }
      case 'message_delta': {
        const delta = event.delta as RawMessageDeltaFields;
        stopReason = delta.stop_reason ?? stopReason;
        if (isObject(delta.stop_details)) stopDetails = delta.stop_details as JsonObject;
        if (isObject(delta.container)) container = delta.container as JsonObject;
        mergeUsage(usage, event.usage);
        break;
      }
      case 'message_stop':
        stopped = true;
        break;
      default:
        break;
    }
  }

  if (!stopped) throw streamInterruptedError(label, 'the event stream ended before message_stop');
  for (const block of blocks.values()) if (block.kind === 'tool') yield* endToolCall(block, providerId);
  if (stopReason === 'refusal') {
    state.openUncitedText = false;
    yield { type: 'refusal-delta', delta: refusalText(stopDetails) };
  }
  return { stopReason, stopDetails, container, usage: toUsage(usage) };
}

interface RawMessageDeltaFields {
  stop_reason?: string | null;
  stop_details?: unknown;
  container?: unknown;
}

/** An empty text delta whose metadata closes the open text block (`citations: null`, as the API reports it). */
function closeText(providerId: string): ModelStreamPart {
  return { type: 'text-delta', delta: '', providerMetadata: { [providerId]: { citations: null } } };
}

function providerContent(
  block: Extract<BlockState, { kind: 'provider' }>,
  providerId: string,
  label: ProviderLabel,
): ModelStreamPart {
  const value: JsonObject = { ...block.value };
  if (block.inputJson !== undefined && block.inputJson !== '') {
    try {
      value.input = JSON.parse(block.inputJson) as JsonObject;
    } catch (error) {
      throw new LunationError(
        'provider-error',
        `${label.name} streamed a ${String(value.type)} block whose input is not JSON for model "${label.model}"; retry the call.`,
        { cause: error, details: { provider: label.name, model: label.model, input: block.inputJson } },
      );
    }
  }
  return { type: 'provider-content', provider: providerId, kind: String(value.type), value };
}

/** The refusal's explanation, or a sentence naming its category when Anthropic sent none. */
function refusalText(stopDetails: JsonObject | null): string {
  const explanation = stopDetails?.explanation;
  if (typeof explanation === 'string' && explanation !== '') return explanation;
  const category = stopDetails?.category;
  return typeof category === 'string'
    ? `The model declined to answer (refusal category: ${category}).`
    : 'The model declined to answer.';
}

function splicedMessageStart(label: ProviderLabel, messageId: string, openMessageId: string): LunationError {
  return new LunationError(
    'stream-interrupted',
    `${label.name} sent a second message_start (message ${messageId}) while message ${openMessageId} was still open, for model "${label.model}": an intermediary spliced a new generation into the stream after parts of the first had been streamed. The two cannot be merged into one answer, so it was dropped. Retry the call.`,
    { retryable: false, details: { provider: label.name, model: label.model, messageId, openMessageId } },
  );
}

/** A call streamed without pieces (no input) ends with its start `input`, or `{}`. */
function* endToolCall(
  block: Extract<BlockState, { kind: 'tool' }>,
  providerId: string,
): Generator<ModelStreamPart> {
  if (block.ended) return;
  block.ended = true;
  if (block.arguments === '') {
    const hasInput =
      typeof block.input === 'object' && block.input !== null && Object.keys(block.input).length > 0;
    block.arguments = hasInput ? JSON.stringify(block.input) : '{}';
    yield { type: 'tool-call-delta', toolCallId: block.id, argumentsDelta: block.arguments };
  }
  yield {
    type: 'tool-call-end',
    toolCallId: block.id,
    toolName: block.name,
    arguments: block.arguments,
    ...(block.caller ? { providerMetadata: { [providerId]: { caller: block.caller } } } : {}),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `message_delta` usage is cumulative; its non-null fields replace those of `message_start`. */
function mergeUsage(target: WireUsage, source: WireUsage | null | undefined): void {
  if (!source) return;
  for (const key of [
    'input_tokens',
    'output_tokens',
    'cache_creation_input_tokens',
    'cache_read_input_tokens',
    'output_tokens_details',
  ] as const) {
    const value = source[key];
    if (value !== null && value !== undefined) (target as Record<string, unknown>)[key] = value;
  }
}

/** Anthropic's `input_tokens` excludes cache reads and writes; the contract's `inputTokens` includes them. */
function toUsage(usage: WireUsage): Usage {
  const cacheReadTokens = usage.cache_read_input_tokens ?? 0;
  const cacheWriteTokens = usage.cache_creation_input_tokens ?? 0;
  return {
    ...emptyUsage(),
    inputTokens: (usage.input_tokens ?? 0) + cacheReadTokens + cacheWriteTokens,
    outputTokens: usage.output_tokens ?? 0,
    cacheReadTokens,
    cacheWriteTokens,
    reasoningTokens: usage.output_tokens_details?.thinking_tokens ?? 0,
  };
}

/** The contract's stop reason for Anthropic's; `pause_turn` never reaches here (the adapter continues the turn). */
export function toStopReason(stopReason: string | null): StopReason {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'max-tokens';
    case 'tool_use':
      return 'tool-use';
    case 'stop_sequence':
      return 'stop-sequence';
    case 'refusal':
      return 'refusal';
    default:
      return 'end-turn';
  }
}
