/**
 * Anthropic's Messages API wire (streaming SSE events, error bodies, headers) for adapter tests:
 * `anthropicWire` for `runProviderConformance` and `ScriptedServer`, and builders for hand-written streams.
 * Adapters that carry less than the Messages API (no signatures, no refusal stop reason) override
 * `capabilities`: `{ ...anthropicWire, capabilities: { ...anthropicWire.capabilities, redactedReasoning: false } }`.
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
  type ScriptedEvent,
  type ScriptedStream,
  scriptedStopReason,
} from '../index.js';

/** Headers Anthropic sends on a streaming Messages response. */
export function streamHeaders(requestId = 'req_011CSHoEeqs5C35K2UUqR7Fy'): Record<string, string> {
  return {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'request-id': requestId,
    'anthropic-organization-id': '27796668-7351-40ac-acc4-024aee8995a5',
  };
}

/** `event: <type>\ndata: <json>\n\n`, the name repeating the payload's `type`. */
export function event(data: { type: string } & Record<string, unknown>): string {
  return formatServerSentEvent(data, data.type);
}

/** The `message_start` event (a recorded message id and model), with `usage` over the recorded defaults. */
export function messageStart(
  usage: Record<string, unknown> = { input_tokens: 25, output_tokens: 1 },
): string {
  return event({
    type: 'message_start',
    message: {
      id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        service_tier: 'standard',
        ...usage,
      },
    },
  });
}

/** The `ping` event Anthropic sends between blocks. */
export const ping = event({ type: 'ping' });
/** The `message_stop` event that ends a stream. */
export const messageStop = event({ type: 'message_stop' });

/** `content_block_start` of block `index` (`text`, `thinking`, `tool_use`, ...). */
export function blockStart(index: number, contentBlock: Record<string, unknown>): string {
  return event({ type: 'content_block_start', index, content_block: contentBlock });
}

/** `content_block_delta` of block `index` (`text_delta`, `thinking_delta`, `input_json_delta`, ...). */
export function blockDelta(index: number, delta: Record<string, unknown>): string {
  return event({ type: 'content_block_delta', index, delta });
}

/** `content_block_stop` of block `index`. */
export function blockStop(index: number): string {
  return event({ type: 'content_block_stop', index });
}

/** `message_delta` with the stop reason (the wire's, e.g. `end_turn`) and the output usage. */
export function messageDelta(
  stopReason: string,
  usage: Record<string, unknown>,
  stopSequence: string | null = null,
): string {
  return event({
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: stopSequence },
    usage,
  });
}

/** An `error` event inside the stream, as the API sends it. */
export function errorEvent(type: string, message: string): string {
  return event({ type: 'error', error: { type, message } });
}

const stopReasons: Partial<Record<StopReason, string>> = {
  'end-turn': 'end_turn',
  'max-tokens': 'max_tokens',
  'tool-use': 'tool_use',
  'stop-sequence': 'stop_sequence',
  refusal: 'refusal',
  // What an adapter without a refusal stop reason (the AI SDK's V4 stream) makes of Anthropic's `refusal`.
  'content-filter': 'refusal',
};

const zeroUsage: Usage = {
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};

type Block =
  | { kind: 'text'; texts: string[] }
  | { kind: 'thinking'; texts: string[]; signature?: string }
  | { kind: 'redacted'; data: string }
  | { kind: 'tool'; id: string; name: string; pieces: string[] };

/** Content blocks are sequential on this wire: interleaved argument pieces are regrouped by call. */
function toBlocks(events: readonly ScriptedEvent[]): Block[] {
  const blocks: Block[] = [];
  const tools = new Map<string, Extract<Block, { kind: 'tool' }>>();
  for (const scripted of events) {
    const last = blocks.at(-1);
    switch (scripted.type) {
      case 'text':
        if (last?.kind === 'text') last.texts.push(scripted.text);
        else blocks.push({ kind: 'text', texts: [scripted.text] });
        break;
      case 'reasoning':
        if (last?.kind === 'thinking' && last.signature === undefined) last.texts.push(scripted.text);
        else blocks.push({ kind: 'thinking', texts: [scripted.text] });
        break;
      case 'reasoning-signature':
        if (last?.kind === 'thinking' && last.signature === undefined) last.signature = scripted.signature;
        else blocks.push({ kind: 'thinking', texts: [], signature: scripted.signature });
        break;
      case 'redacted-reasoning':
        blocks.push({ kind: 'redacted', data: scripted.data });
        break;
      case 'tool-call-start': {
        const block = { kind: 'tool' as const, id: scripted.toolCallId, name: scripted.toolName, pieces: [] };
        tools.set(scripted.toolCallId, block);
        blocks.push(block);
        break;
      }
      case 'tool-call-delta':
        tools.get(scripted.toolCallId)?.pieces.push(scripted.argumentsDelta);
        break;
    }
  }
  return blocks;
}

function toWireUsage(usage: Usage): Record<string, unknown> {
  return {
    input_tokens: usage.inputTokens - usage.cacheReadTokens - usage.cacheWriteTokens,
    cache_creation_input_tokens: usage.cacheWriteTokens,
    cache_read_input_tokens: usage.cacheReadTokens,
  };
}

function encodeStream(stream: ScriptedStream): HttpResponseScript {
  const steps: HttpBodyStep[] = [];
  const push = (text: string) => {
    if (stream.delayMs !== undefined) steps.push({ delayMs: stream.delayMs });
    steps.push(text);
  };
  const usage = stream.usage ?? zeroUsage;
  push(messageStart({ ...toWireUsage(usage), output_tokens: 1 }));
  const ending = stream.ending ?? 'complete';
  const blocks = toBlocks(stream.events);
  blocks.forEach((block, index) => {
    switch (block.kind) {
      case 'text':
        push(blockStart(index, { type: 'text', text: '' }));
        for (const text of block.texts) push(blockDelta(index, { type: 'text_delta', text }));
        break;
      case 'thinking':
        push(blockStart(index, { type: 'thinking', thinking: '', signature: '' }));
        for (const thinking of block.texts) push(blockDelta(index, { type: 'thinking_delta', thinking }));
        if (block.signature !== undefined)
          push(blockDelta(index, { type: 'signature_delta', signature: block.signature }));
        break;
      case 'redacted':
        push(blockStart(index, { type: 'redacted_thinking', data: block.data }));
        break;
      case 'tool':
        push(blockStart(index, { type: 'tool_use', id: block.id, name: block.name, input: {} }));
        for (const piece of block.pieces)
          push(blockDelta(index, { type: 'input_json_delta', partial_json: piece }));
        break;
    }
    if (index === 0) push(ping);
    // A cut stream stops inside its last block.
    if (ending === 'complete' || index < blocks.length - 1) push(blockStop(index));
  });
  if (ending === 'complete') {
    const stopReason = scriptedStopReason(stream);
    const wireStopReason = stopReasons[stopReason];
    if (wireStopReason === undefined)
      throw new Error(`The Messages API has no stop_reason for "${stopReason}"`);
    const wireUsage = {
      ...toWireUsage(usage),
      output_tokens: usage.outputTokens,
      ...(usage.reasoningTokens > 0
        ? { output_tokens_details: { thinking_tokens: usage.reasoningTokens } }
        : {}),
    };
    const refusal = stream.events.flatMap((scripted) => (scripted.type === 'refusal' ? [scripted.text] : []));
    push(
      stopReason === 'refusal' && refusal.length > 0
        ? refusalDelta(refusal.join(''), wireUsage)
        : messageDelta(wireStopReason, wireUsage, stopReason === 'stop-sequence' ? '###' : null),
    );
    push(messageStop);
  }
  return {
    status: 200,
    headers: { ...streamHeaders(), ...stream.headers },
    body: steps,
    ending: ending === 'complete' || ending === 'close' ? 'end' : ending,
  };
}

/** A refusal has no content block: its explanation travels in the message delta's `stop_details`. */
function refusalDelta(explanation: string, usage: Record<string, unknown>): string {
  return event({
    type: 'message_delta',
    delta: {
      stop_reason: 'refusal',
      stop_sequence: null,
      stop_details: { type: 'refusal', category: 'cyber', explanation },
    },
    usage,
  });
}

/** Anthropic's error body: `{ type: 'error', error: { type, message }, request_id }`. */
export function errorBody(
  status: number,
  message?: string,
  contextOverflow = false,
): Record<string, unknown> {
  if (contextOverflow) {
    return {
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: message ?? 'prompt is too long: 208656 tokens > 200000 maximum',
      },
      request_id: 'req_011CWdepJvA2D819tdYYq4h7',
    };
  }
  const [type, defaultMessage] = errorDefaults(status);
  return {
    type: 'error',
    error: { type, message: message ?? defaultMessage },
    request_id: 'req_011CWdepJvA2D819tdYYq4h7',
  };
}

function errorDefaults(status: number): [string, string] {
  switch (status) {
    case 400:
      return ['invalid_request_error', 'messages: text content blocks must be non-empty'];
    case 401:
      return ['authentication_error', 'invalid x-api-key'];
    case 403:
      return ['permission_error', 'Your API key does not have permission to use the specified resource.'];
    case 404:
      return ['not_found_error', 'model: claude-sonnet-9'];
    case 408:
    case 504:
      return ['timeout_error', 'Request timed out'];
    case 413:
      return ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'];
    case 429:
      return [
        'rate_limit_error',
        'This request would exceed the rate limit for your organization of 20,000 input tokens per minute.',
      ];
    case 500:
    case 502:
      return ['api_error', 'Internal server error'];
    case 503:
    case 529:
      return ['overloaded_error', 'Overloaded'];
    default:
      return status >= 500
        ? ['api_error', 'Internal server error']
        : ['invalid_request_error', 'Invalid request'];
  }
}

function encodeError(error: ScriptedError): HttpResponseScript {
  return {
    status: error.status,
    headers: {
      'content-type': 'application/json',
      'request-id': 'req_011CWdepJvA2D819tdYYq4h7',
      'x-should-retry':
        error.status === 429 || error.status === 408 || error.status >= 500 ? 'true' : 'false',
      ...error.headers,
    },
    body: JSON.stringify(errorBody(error.status, error.message, error.contextOverflow)),
  };
}

/** The Messages API wire for `@lunation/provider-testkit`. */
export const anthropicWire: ProviderWire = {
  encode: (response) => (response.type === 'stream' ? encodeStream(response) : encodeError(response)),
  capabilities: {
    reasoning: true,
    reasoningSignature: true,
    redactedReasoning: true,
    interleavedToolCalls: false,
    refusal: true,
    stopReasons: ['end-turn', 'max-tokens', 'tool-use', 'stop-sequence', 'refusal'],
  },
};
