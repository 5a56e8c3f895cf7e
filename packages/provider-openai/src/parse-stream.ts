import {
  emptyUsage,
  LunationError,
  type ModelStreamPart,
  type StopReason,
  type Usage,
} from '@lunation/contract';
import { type ProviderLabel, streamInterruptedError } from '@lunation/contract/provider-utils';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import { cutOffCallError } from './cut-off-call-error.js';

interface ToolCallState {
  index: number;
  id: string | undefined;
  name: string | undefined;
  arguments: string;
  started: boolean;
  ended: boolean;
}

/**
 * Turns Chat Completions chunks into contract stream parts. Tool calls are keyed by their `index`, so
 * argument pieces of parallel calls may interleave; every open call ends when `finish_reason` arrives.
 * The stream counts as complete once a `finish_reason` was seen; otherwise it ended too early.
 */
export async function* parseStream(
  chunks: AsyncIterable<ChatCompletionChunk>,
  label: ProviderLabel,
): AsyncGenerator<ModelStreamPart> {
  const calls = new Map<number, ToolCallState>();
  let finishReason: string | undefined;
  let usage: Usage | undefined;
  let refused = false;

  for await (const chunk of chunks) {
    if (chunk.usage) usage = toUsage(chunk.usage);
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta = choice.delta ?? {};
      const reasoning = reasoningText(delta);
      if (reasoning !== '') yield { type: 'reasoning-delta', delta: reasoning };
      if (typeof delta.content === 'string' && delta.content !== '')
        yield { type: 'text-delta', delta: delta.content };
      if (typeof delta.refusal === 'string' && delta.refusal !== '') {
        refused = true;
        yield { type: 'refusal-delta', delta: delta.refusal };
      }
      for (const toolCall of delta.tool_calls ?? []) {
        const index = toolCall.index ?? calls.size;
        let call = calls.get(index);
        if (call === undefined) {
          call = { index, id: undefined, name: undefined, arguments: '', started: false, ended: false };
          calls.set(index, call);
        }
        call.id ??= toolCall.id || undefined;
        call.name ??= toolCall.function?.name || undefined;
        const piece = toolCall.function?.arguments ?? '';
        if (!call.started && call.name !== undefined) {
          call.id ??= `call_${index}`;
          call.started = true;
          yield { type: 'tool-call-start', toolCallId: call.id, toolName: call.name };
          if (call.arguments !== '')
            yield { type: 'tool-call-delta', toolCallId: call.id, argumentsDelta: call.arguments };
        }
        if (piece !== '') {
          call.arguments += piece;
          if (call.started) yield { type: 'tool-call-delta', toolCallId: call.id!, argumentsDelta: piece };
        }
      }
      if (choice.finish_reason) {
        finishReason = choice.finish_reason;
        yield* endCalls(calls, label, finishReason === 'length');
      }
    }
  }

  if (finishReason === undefined) {
    throw streamInterruptedError(label, 'the response ended without a finish_reason');
  }
  // A server that reported no usage: the zeros are placeholders, not counts.
  yield usage === undefined
    ? { type: 'usage', usage: emptyUsage(), unknown: true }
    : { type: 'usage', usage };
  yield {
    type: 'finish',
    stopReason: refused && finishReason === 'stop' ? 'refusal' : toStopReason(finishReason, calls.size > 0),
    rawStopReason: finishReason,
  };
}

/**
 * Ends every open call. At the token limit (`cutOff`), a call whose arguments are not whole JSON was cut off in
 * the middle: it throws instead of reaching the loop with half its arguments.
 */
function* endCalls(
  calls: Map<number, ToolCallState>,
  label: ProviderLabel,
  cutOff: boolean,
): Generator<ModelStreamPart> {
  for (const call of [...calls.values()].sort((a, b) => a.index - b.index)) {
    if (call.ended) continue;
    if (cutOff && call.started && call.arguments !== '' && !isJson(call.arguments)) {
      throw cutOffCallError(
        label,
        { callId: call.id!, name: call.name!, arguments: call.arguments },
        'length',
      );
    }
    if (!call.started || call.id === undefined || call.name === undefined) {
      throw new LunationError(
        'provider-error',
        `${label.name} streamed tool call #${call.index} without a function name for model "${label.model}"; the server's tool-call output is malformed.`,
        { retryable: false, details: { provider: label.name, model: label.model } },
      );
    }
    if (call.arguments === '') {
      call.arguments = '{}';
      yield { type: 'tool-call-delta', toolCallId: call.id, argumentsDelta: '{}' };
    }
    call.ended = true;
    yield { type: 'tool-call-end', toolCallId: call.id, toolName: call.name, arguments: call.arguments };
  }
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** OpenAI-compatible servers stream reasoning as `reasoning_content` (DeepSeek, vLLM) or `reasoning` (OpenRouter, newer vLLM). */
function reasoningText(delta: object): string {
  const fields = delta as { reasoning_content?: unknown; reasoning?: unknown };
  const value = fields.reasoning_content ?? fields.reasoning;
  return typeof value === 'string' ? value : '';
}

/**
 * The contract's usage: reasoning ⊆ output, cache reads ⊆ input. Vendors differ, and the numbers tell them
 * apart: OpenAI counts reasoning inside `completion_tokens` (total = prompt + completion); xAI counts it
 * outside (total = prompt + completion + reasoning), and so does any server reporting more reasoning than
 * completion tokens. DeepSeek reports cache hits as `prompt_cache_hit_tokens`, Moonshot as a top-level
 * `cached_tokens`; a cache count larger than `prompt_tokens` was left out of it.
 */
export function toUsage(usage: CompletionUsage): Usage {
  const vendor = usage as CompletionUsage & {
    prompt_cache_hit_tokens?: number;
    cached_tokens?: number;
  };
  const prompt = usage.prompt_tokens ?? 0;
  const completion = usage.completion_tokens ?? 0;
  const reasoning = usage.completion_tokens_details?.reasoning_tokens ?? 0;
  const total = usage.total_tokens;
  const reasoningOutside =
    reasoning > 0 &&
    (reasoning > completion ||
      (typeof total === 'number' &&
        total !== prompt + completion &&
        total === prompt + completion + reasoning));
  const cacheRead =
    usage.prompt_tokens_details?.cached_tokens ?? vendor.prompt_cache_hit_tokens ?? vendor.cached_tokens ?? 0;
  const cacheWrite = usage.prompt_tokens_details?.cache_write_tokens ?? 0;
  return {
    inputTokens: cacheRead + cacheWrite > prompt ? prompt + cacheRead + cacheWrite : prompt,
    outputTokens: reasoningOutside ? completion + reasoning : completion,
    cacheReadTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    reasoningTokens: reasoning,
  };
}

/** `stop` with tool calls counts as tool use: some OpenAI-compatible servers report it that way. */
function toStopReason(finishReason: string, hadToolCalls: boolean): StopReason {
  switch (finishReason) {
    case 'length':
      return 'max-tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool-use';
    case 'content_filter':
      return 'content-filter';
    case 'error':
      return 'error';
    default:
      return hadToolCalls ? 'tool-use' : 'end-turn';
  }
}
