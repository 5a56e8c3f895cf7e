/**
 * OpenAI's Chat Completions wire (streaming chunks, error bodies, headers) for adapter tests: `openaiWire` for
 * `runProviderConformance` and `ScriptedServer`, and builders for hand-written streams. Adapters that do not
 * read the `reasoning_content` extension override `capabilities`:
 * `{ ...openaiWire, capabilities: { ...openaiWire.capabilities, reasoning: false } }`.
 *
 * @module
 */
import type { StopReason, Usage } from '@lunation/contract';
import {
  formatServerSentEvent,
  type HttpBodyStep,
  type HttpResponseScript,
  type ProviderWire,
  type ScriptedError,
  type ScriptedStream,
  scriptedStopReason,
} from '../index.js';

/** Headers OpenAI sends on a streaming Chat Completions response. */
export function streamHeaders(requestId = 'req_7f3e2b9c1d0a4e5f8a6b'): Record<string, string> {
  return {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'openai-version': '2020-10-01',
    'openai-processing-ms': '182',
    'x-request-id': requestId,
  };
}

const chunkBase = {
  id: 'chatcmpl-C1xYz9AbCdEfGhIjKlMnOpQrStUv',
  object: 'chat.completion.chunk',
  created: 1_754_000_000,
  model: 'gpt-4.1-mini-2025-04-14',
  service_tier: 'default',
  system_fingerprint: 'fp_6f2eabb9a5',
};

/** One `data: {chunk}` event with a single choice. */
export function chunk(delta: Record<string, unknown>, finishReason: string | null = null): string {
  return formatServerSentEvent({
    ...chunkBase,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    usage: null,
  });
}

/** The usage-only chunk sent before `[DONE]` when `stream_options.include_usage` is set. */
export function usageChunk(usage: Usage): string {
  return formatServerSentEvent({ ...chunkBase, choices: [], usage: toWireUsage(usage) });
}

/** The `data: [DONE]` line that ends a Chat Completions stream. */
export const done = 'data: [DONE]\n\n';

/** A contract `Usage` as Chat Completions reports it (`prompt_tokens`, `completion_tokens`, details). */
export function toWireUsage(usage: Usage): Record<string, unknown> {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: {
      cached_tokens: usage.cacheReadTokens,
      audio_tokens: 0,
      ...(usage.cacheWriteTokens > 0 ? { cache_write_tokens: usage.cacheWriteTokens } : {}),
    },
    completion_tokens_details: {
      reasoning_tokens: usage.reasoningTokens,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

const finishReasons: Partial<Record<StopReason, string>> = {
  'end-turn': 'stop',
  'max-tokens': 'length',
  'tool-use': 'tool_calls',
  'content-filter': 'content_filter',
  // A refusal is its `delta.refusal` pieces, and the answer stops as any other.
  refusal: 'stop',
};

const zeroUsage: Usage = {
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};

function encodeStream(stream: ScriptedStream): HttpResponseScript {
  const steps: HttpBodyStep[] = [];
  const push = (event: string) => {
    if (stream.delayMs !== undefined) steps.push({ delayMs: stream.delayMs });
    steps.push(event);
  };
  push(chunk({ role: 'assistant', content: '', refusal: null }));
  const callIndexes = new Map<string, number>();
  for (const event of stream.events) {
    switch (event.type) {
      case 'text':
        push(chunk({ content: event.text }));
        break;
      case 'reasoning':
        push(chunk({ content: null, reasoning_content: event.text }));
        break;
      case 'refusal':
        push(chunk({ refusal: event.text }));
        break;
      case 'tool-call-start': {
        const index = callIndexes.size;
        callIndexes.set(event.toolCallId, index);
        push(
          chunk({
            tool_calls: [
              {
                index,
                id: event.toolCallId,
                type: 'function',
                function: { name: event.toolName, arguments: '' },
              },
            ],
          }),
        );
        break;
      }
      case 'tool-call-delta':
        push(
          chunk({
            tool_calls: [
              { index: callIndexes.get(event.toolCallId), function: { arguments: event.argumentsDelta } },
            ],
          }),
        );
        break;
      default:
        // Chat Completions has no reasoning signatures or redacted reasoning.
        break;
    }
  }
  const ending = stream.ending ?? 'complete';
  if (ending === 'complete') {
    const stopReason = scriptedStopReason(stream);
    const finishReason = finishReasons[stopReason];
    if (finishReason === undefined)
      throw new Error(`Chat Completions has no finish_reason for "${stopReason}"`);
    push(chunk({}, finishReason));
    push(usageChunk(stream.usage ?? zeroUsage));
    push(done);
  }
  return {
    status: 200,
    headers: { ...streamHeaders(), ...stream.headers },
    body: steps,
    ending: ending === 'complete' || ending === 'close' ? 'end' : ending,
  };
}

/** OpenAI's error bodies by status: `{ error: { message, type, param, code } }`. */
export function errorBody(
  status: number,
  message?: string,
  contextOverflow = false,
): Record<string, unknown> {
  if (contextOverflow) {
    return {
      error: {
        message:
          message ??
          "This model's maximum context length is 128000 tokens. However, your messages resulted in 204308 tokens. Please reduce the length of the messages.",
        type: 'invalid_request_error',
        param: 'messages',
        code: 'context_length_exceeded',
      },
    };
  }
  const [defaultMessage, type, code] = errorDefaults(status);
  return { error: { message: message ?? defaultMessage, type, param: null, code } };
}

function errorDefaults(status: number): [string, string, string | null] {
  switch (status) {
    case 400:
      return [
        "Invalid value for 'temperature': expected a number between 0 and 2.",
        'invalid_request_error',
        null,
      ];
    case 401:
      return [
        'Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.',
        'invalid_request_error',
        'invalid_api_key',
      ];
    case 403:
      return [
        'Country, region, or territory not supported',
        'request_forbidden',
        'unsupported_country_region_territory',
      ];
    case 404:
      return [
        'The model `gpt-4.1-mini` does not exist or you do not have access to it.',
        'invalid_request_error',
        'model_not_found',
      ];
    case 429:
      return [
        'Rate limit reached for gpt-4.1-mini in organization org-test on tokens per min (TPM): Limit 30000, Used 28039, Requested 3906. Please try again in 3.89s.',
        'tokens',
        'rate_limit_exceeded',
      ];
    case 503:
      return ['The engine is currently overloaded, please try again later.', 'server_error', null];
    default:
      return status >= 500
        ? ['The server had an error while processing your request. Sorry about that!', 'server_error', null]
        : ['The request could not be processed.', 'invalid_request_error', null];
  }
}

function encodeError(error: ScriptedError): HttpResponseScript {
  return {
    status: error.status,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'x-request-id': 'req_0b1c2d3e4f5a6b7c8d9e',
      ...error.headers,
    },
    body: JSON.stringify(errorBody(error.status, error.message, error.contextOverflow)),
  };
}

/** The Chat Completions wire for `@lunation/provider-testkit`. */
export const openaiWire: ProviderWire = {
  encode: (response) => (response.type === 'stream' ? encodeStream(response) : encodeError(response)),
  capabilities: {
    reasoning: true,
    reasoningSignature: false,
    redactedReasoning: false,
    interleavedToolCalls: true,
    refusal: true,
    stopReasons: ['end-turn', 'max-tokens', 'tool-use', 'content-filter'],
  },
};

/** OpenAI's body for an account whose quota or credit is used up (HTTP 429, and inside streams). */
export const insufficientQuota = {
  message:
    'You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.',
  type: 'insufficient_quota',
  param: null,
  code: 'insufficient_quota',
};
