import type { RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import type { ModelStreamPart, StopReason, Usage } from '@lunation/contract';
import { type ProviderLabel, streamInterruptedError } from '@lunation/contract';

type BlockState =
  | { kind: 'thinking'; signature: string | undefined; signatureSent: boolean }
  | { kind: 'tool'; id: string; name: string; arguments: string; input: unknown; ended: boolean }
  | { kind: 'other' };

interface WireUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  output_tokens_details?: { thinking_tokens?: number | null } | null;
}

/**
 * Turns Messages API stream events into contract stream parts. The stream counts as complete only
 * once `message_stop` arrived; `ping` and unknown events are ignored.
 */
export async function* parseStream(
  events: AsyncIterable<RawMessageStreamEvent>,
  label: ProviderLabel,
): AsyncGenerator<ModelStreamPart> {
  const blocks = new Map<number, BlockState>();
  const usage: WireUsage = {};
  let stopReason: string | null = null;
  let stopped = false;

  for await (const event of events) {
    switch (event.type) {
      case 'message_start':
        mergeUsage(usage, event.message.usage);
        break;
      case 'content_block_start': {
        const block = event.content_block;
        if (block.type === 'text') {
          blocks.set(event.index, { kind: 'other' });
          if (block.text) yield { type: 'text-delta', delta: block.text };
        } else if (block.type === 'thinking') {
          blocks.set(event.index, {
            kind: 'thinking',
            signature: block.signature || undefined,
            signatureSent: false,
          });
          if (block.thinking) yield { type: 'reasoning-delta', delta: block.thinking };
        } else if (block.type === 'redacted_thinking') {
          blocks.set(event.index, { kind: 'other' });
          yield { type: 'reasoning-delta', delta: block.data, redacted: true };
        } else if (block.type === 'tool_use') {
          blocks.set(event.index, {
            kind: 'tool',
            id: block.id,
            name: block.name,
            arguments: '',
            input: block.input,
            ended: false,
          });
          yield { type: 'tool-call-start', toolCallId: block.id, toolName: block.name };
        } else {
          blocks.set(event.index, { kind: 'other' });
        }
        break;
      }
      case 'content_block_delta': {
        const block = blocks.get(event.index);
        const delta = event.delta;
        if (delta.type === 'text_delta') {
          if (delta.text) yield { type: 'text-delta', delta: delta.text };
        } else if (delta.type === 'thinking_delta') {
          if (delta.thinking) yield { type: 'reasoning-delta', delta: delta.thinking };
        } else if (delta.type === 'signature_delta') {
          if (block?.kind === 'thinking') block.signatureSent = true;
          yield { type: 'reasoning-delta', delta: '', signature: delta.signature };
        } else if (delta.type === 'input_json_delta') {
          if (block?.kind === 'tool' && delta.partial_json) {
            block.arguments += delta.partial_json;
            yield { type: 'tool-call-delta', toolCallId: block.id, argumentsDelta: delta.partial_json };
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
          yield* endToolCall(block);
        }
        break;
      }
      case 'message_delta':
        stopReason = event.delta.stop_reason ?? stopReason;
        mergeUsage(usage, event.usage);
        break;
      case 'message_stop':
        stopped = true;
        break;
      default:
        break;
    }
  }

  if (!stopped) throw streamInterruptedError(label, 'the event stream ended before message_stop');
  for (const block of blocks.values()) if (block.kind === 'tool') yield* endToolCall(block);
  yield { type: 'usage', usage: toUsage(usage) };
  yield { type: 'finish', stopReason: toStopReason(stopReason), rawStopReason: stopReason ?? undefined };
}

/** A call streamed without pieces (no input) ends with its start `input`, or `{}`. */
function* endToolCall(block: Extract<BlockState, { kind: 'tool' }>): Generator<ModelStreamPart> {
  if (block.ended) return;
  block.ended = true;
  if (block.arguments === '') {
    const hasInput =
      typeof block.input === 'object' && block.input !== null && Object.keys(block.input).length > 0;
    block.arguments = hasInput ? JSON.stringify(block.input) : '{}';
    yield { type: 'tool-call-delta', toolCallId: block.id, argumentsDelta: block.arguments };
  }
  yield { type: 'tool-call-end', toolCallId: block.id, toolName: block.name, arguments: block.arguments };
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
    inputTokens: (usage.input_tokens ?? 0) + cacheReadTokens + cacheWriteTokens,
    outputTokens: usage.output_tokens ?? 0,
    cacheReadTokens,
    cacheWriteTokens,
    reasoningTokens: usage.output_tokens_details?.thinking_tokens ?? 0,
  };
}

/** `pause_turn` has no contract equivalent and reads as `end-turn` (see `rawStopReason`). */
function toStopReason(stopReason: string | null): StopReason {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'max-tokens';
    case 'tool_use':
      return 'tool-use';
    case 'stop_sequence':
      return 'stop-sequence';
    case 'refusal':
      return 'content-filter';
    default:
      return 'end-turn';
  }
}
