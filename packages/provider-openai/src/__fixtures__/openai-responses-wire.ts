import type { StopReason, Usage } from '@lunation/contract';
import {
  formatServerSentEvent,
  type HttpBodyStep,
  type HttpResponseScript,
  type ProviderWire,
  type ScriptedEvent,
  type ScriptedStream,
  scriptedStopReason,
} from '@lunation/provider-testkit';
import { errorBody } from '@lunation/provider-testkit/wires/openai-chat';

/**
 * The Responses API's streaming wire, as OpenAI sends it: `event: <type>` and `data: <json>` lines per event,
 * every event carrying `type` and a growing `sequence_number`; `response.created` and `response.in_progress`
 * first, then each output item as `output_item.added`, its deltas, its `.done` events and `output_item.done`,
 * and `response.completed` (or `.incomplete` / `.failed`) with the whole response and its usage. Shapes follow
 * recorded OpenAI streams and the `openai` SDK's types.
 */

/** Headers OpenAI sends on a streaming Responses response. */
export function responsesStreamHeaders(requestId = 'req_2c9f1e7a5b3d4c6e8f0a'): Record<string, string> {
  return {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'openai-version': '2020-10-01',
    'openai-processing-ms': '96',
    'x-request-id': requestId,
  };
}

export const RESPONSE_ID = 'resp_0c1d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b';

/** The `response` object of lifecycle events, as OpenAI sends it (with `store: false`). */
export function responseObject(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: RESPONSE_ID,
    object: 'response',
    created_at: 1_765_552_659,
    status: 'in_progress',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    max_tool_calls: null,
    model: 'gpt-5-mini-2025-08-07',
    output: [],
    parallel_tool_calls: true,
    previous_response_id: null,
    prompt_cache_key: null,
    prompt_cache_retention: null,
    reasoning: { effort: 'medium', summary: 'detailed' },
    safety_identifier: null,
    service_tier: 'auto',
    store: false,
    temperature: 1,
    text: { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: 'auto',
    tools: [],
    top_logprobs: 0,
    top_p: 1,
    truncation: 'disabled',
    usage: null,
    user: null,
    metadata: {},
    ...fields,
  };
}

/** Usage as `response.completed` carries it. */
export function toResponsesWireUsage(usage: Usage): Record<string, unknown> {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: {
      cached_tokens: usage.cacheReadTokens,
      ...(usage.cacheWriteTokens > 0 ? { cache_write_tokens: usage.cacheWriteTokens } : {}),
    },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}

/**
 * Writes one Responses stream: numbers events and keeps the finished output items for the final response.
 * `responseFields` are echoed in every `response` object, as OpenAI echoes the request's settings (e.g. `text`).
 */
export class ResponsesStreamWriter {
  readonly events: string[] = [];
  readonly #responseFields: Record<string, unknown>;
  readonly output: Record<string, unknown>[] = [];
  #sequence = 0;
  #nextIndex = 0;

  constructor(responseFields: Record<string, unknown> = {}) {
    this.#responseFields = responseFields;
  }

  #response(fields: Record<string, unknown> = {}): Record<string, unknown> {
    return responseObject({ ...this.#responseFields, ...fields });
  }

  /** One event, framed as OpenAI frames it. */
  event(type: string, fields: Record<string, unknown> = {}): string {
    const event = formatServerSentEvent({ type, sequence_number: this.#sequence++, ...fields }, type);
    this.events.push(event);
    return event;
  }

  created(): this {
    this.event('response.created', { response: this.#response() });
    this.event('response.in_progress', { response: this.#response() });
    return this;
  }

  /** Reserves the next `output_index`. */
  nextOutputIndex(): number {
    return this.#nextIndex++;
  }

  /** A whole assistant message whose text arrives in `pieces`. */
  message(id: string, pieces: string[], annotations: unknown[] = []): this {
    this.openMessage(id, this.nextOutputIndex());
    for (const piece of pieces) this.textDelta(id, piece);
    return this.closeMessage(id, pieces.join(''), annotations);
  }

  #open: { id: string; index: number } | undefined;

  openMessage(id: string, index: number): this {
    this.#open = { id, index };
    this.event('response.output_item.added', {
      output_index: index,
      item: { id, type: 'message', status: 'in_progress', content: [], role: 'assistant' },
    });
    this.event('response.content_part.added', {
      item_id: id,
      output_index: index,
      content_index: 0,
      part: { type: 'output_text', annotations: [], logprobs: [], text: '' },
    });
    return this;
  }

  textDelta(id: string, delta: string): this {
    this.event('response.output_text.delta', {
      item_id: id,
      output_index: this.#open?.index ?? 0,
      content_index: 0,
      delta,
      logprobs: [],
      obfuscation: 'x7Rk2',
    });
    return this;
  }

  closeMessage(id: string, text: string, annotations: unknown[] = []): this {
    const index = this.#open?.index ?? 0;
    const part = { type: 'output_text', annotations, logprobs: [], text };
    this.event('response.output_text.done', {
      item_id: id,
      output_index: index,
      content_index: 0,
      text,
      logprobs: [],
    });
    this.event('response.content_part.done', { item_id: id, output_index: index, content_index: 0, part });
    const item = { id, type: 'message', status: 'completed', content: [part], role: 'assistant' };
    this.event('response.output_item.done', { output_index: index, item });
    this.output.push(item);
    this.#open = undefined;
    return this;
  }

  /** A message holding only a refusal. */
  refusal(id: string, pieces: string[]): this {
    const index = this.nextOutputIndex();
    const refusal = pieces.join('');
    this.event('response.output_item.added', {
      output_index: index,
      item: { id, type: 'message', status: 'in_progress', content: [], role: 'assistant' },
    });
    this.event('response.content_part.added', {
      item_id: id,
      output_index: index,
      content_index: 0,
      part: { type: 'refusal', refusal: '' },
    });
    for (const delta of pieces) {
      this.event('response.refusal.delta', { item_id: id, output_index: index, content_index: 0, delta });
    }
    this.event('response.refusal.done', { item_id: id, output_index: index, content_index: 0, refusal });
    const part = { type: 'refusal', refusal };
    this.event('response.content_part.done', { item_id: id, output_index: index, content_index: 0, part });
    const item = { id, type: 'message', status: 'completed', content: [part], role: 'assistant' };
    this.event('response.output_item.done', { output_index: index, item });
    this.output.push(item);
    return this;
  }

  #reasoning:
    | { id: string; index: number; summaries: string[]; current: string; partOpen: boolean }
    | undefined;

  openReasoning(id: string): this {
    const index = this.nextOutputIndex();
    this.#reasoning = { id, index, summaries: [], current: '', partOpen: false };
    this.event('response.output_item.added', {
      output_index: index,
      item: { id, type: 'reasoning', encrypted_content: encrypted(id, 'added'), summary: [] },
    });
    return this;
  }

  summaryPart(): this {
    const reasoning = this.#reasoning!;
    this.#endSummaryPart();
    reasoning.partOpen = true;
    this.event('response.reasoning_summary_part.added', {
      item_id: reasoning.id,
      output_index: reasoning.index,
      summary_index: reasoning.summaries.length,
      part: { type: 'summary_text', text: '' },
    });
    return this;
  }

  summaryDelta(delta: string): this {
    const reasoning = this.#reasoning!;
    reasoning.current += delta;
    this.event('response.reasoning_summary_text.delta', {
      item_id: reasoning.id,
      output_index: reasoning.index,
      summary_index: reasoning.summaries.length,
      delta,
      obfuscation: 'Qx3v9',
    });
    return this;
  }

  #endSummaryPart(): void {
    const reasoning = this.#reasoning!;
    if (!reasoning.partOpen) return;
    const summaryIndex = reasoning.summaries.length;
    const text = reasoning.current;
    this.event('response.reasoning_summary_text.done', {
      item_id: reasoning.id,
      output_index: reasoning.index,
      summary_index: summaryIndex,
      text,
    });
    this.event('response.reasoning_summary_part.done', {
      item_id: reasoning.id,
      output_index: reasoning.index,
      summary_index: summaryIndex,
      part: { type: 'summary_text', text },
    });
    reasoning.summaries.push(text);
    reasoning.current = '';
    reasoning.partOpen = false;
  }

  closeReasoning(encryptedContent?: string): this {
    const reasoning = this.#reasoning!;
    this.#endSummaryPart();
    const item = {
      id: reasoning.id,
      type: 'reasoning',
      encrypted_content: encryptedContent ?? encrypted(reasoning.id, 'done'),
      summary: reasoning.summaries.map((text) => ({ type: 'summary_text', text })),
    };
    this.event('response.output_item.done', { output_index: reasoning.index, item });
    this.output.push(item);
    this.#reasoning = undefined;
    return this;
  }

  /** A reasoning item with one summary part per entry of `summaries` (each a list of deltas). */
  reasoning(id: string, summaries: string[][], encryptedContent?: string): this {
    this.openReasoning(id);
    for (const pieces of summaries) {
      this.summaryPart();
      for (const piece of pieces) this.summaryDelta(piece);
      this.#endSummaryPart();
    }
    return this.closeReasoning(encryptedContent);
  }

  openCall(itemId: string, callId: string, name: string, index = this.nextOutputIndex()): number {
    this.event('response.output_item.added', {
      output_index: index,
      item: {
        id: itemId,
        type: 'function_call',
        status: 'in_progress',
        arguments: '',
        call_id: callId,
        name,
      },
    });
    return index;
  }

  argumentsDelta(itemId: string, index: number, delta: string): this {
    this.event('response.function_call_arguments.delta', {
      item_id: itemId,
      output_index: index,
      delta,
      obfuscation: 'hK2tg6',
    });
    return this;
  }

  closeCall(itemId: string, callId: string, name: string, index: number, args: string): this {
    this.event('response.function_call_arguments.done', {
      item_id: itemId,
      output_index: index,
      arguments: args,
    });
    const item = {
      id: itemId,
      type: 'function_call',
      status: 'completed',
      arguments: args,
      call_id: callId,
      name,
    };
    this.event('response.output_item.done', { output_index: index, item });
    this.output.push(item);
    return this;
  }

  /** A whole function call whose arguments arrive in `pieces`. */
  call(itemId: string, callId: string, name: string, pieces: string[]): this {
    const index = this.openCall(itemId, callId, name);
    for (const piece of pieces) this.argumentsDelta(itemId, index, piece);
    return this.closeCall(itemId, callId, name, index, pieces.join(''));
  }

  /** A hosted tool's item (web search, ...), added in progress and done as given. */
  hostedItem(item: Record<string, unknown>, progress: string[] = []): this {
    const index = this.nextOutputIndex();
    this.event('response.output_item.added', {
      output_index: index,
      item: { ...item, status: 'in_progress' },
    });
    for (const type of progress) this.event(type, { output_index: index, item_id: item.id });
    this.event('response.output_item.done', { output_index: index, item });
    this.output.push(item);
    return this;
  }

  completed(usage: Usage): this {
    this.event('response.completed', {
      response: this.#response({
        status: 'completed',
        completed_at: 1_765_552_662,
        output: this.output,
        usage: toResponsesWireUsage(usage),
      }),
    });
    return this;
  }

  incomplete(reason: 'max_output_tokens' | 'content_filter', usage: Usage): this {
    this.event('response.incomplete', {
      response: this.#response({
        status: 'incomplete',
        incomplete_details: { reason },
        output: this.output,
        usage: toResponsesWireUsage(usage),
      }),
    });
    return this;
  }

  /** An error event and `response.failed`, as OpenAI sends a failure after the stream started. */
  failed(code: string, message: string, type = code): this {
    this.event('error', { error: { type, code, message, param: null } });
    this.event('response.failed', {
      response: this.#response({ status: 'failed', error: { code, message }, output: this.output }),
    });
    return this;
  }
}

function encrypted(id: string, stage: string): string {
  return `gAAAAABpPDIU${Buffer.from(`${id}:${stage}`).toString('base64url')}`;
}

const zeroUsage: Usage = {
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};

/**
 * Encodes a scripted stream. The Responses API sends output items one after another, so the argument pieces of
 * parallel calls never interleave: calls are regrouped by call, in the order they started.
 */
function encodeStream(stream: ScriptedStream): HttpResponseScript {
  const writer = new ResponsesStreamWriter().created();
  const steps: HttpBodyStep[] = [];
  let written = 0;
  const flush = () => {
    for (const event of writer.events.slice(written)) {
      if (stream.delayMs !== undefined) steps.push({ delayMs: stream.delayMs });
      steps.push(event);
    }
    written = writer.events.length;
  };
  const ending = stream.ending ?? 'complete';
  const complete = ending === 'complete';
  let open: { kind: 'text' | 'reasoning'; id: string; text: string } | undefined;
  let items = 0;
  const close = () => {
    if (open?.kind === 'text') writer.closeMessage(open.id, open.text);
    if (open?.kind === 'reasoning') writer.closeReasoning();
    open = undefined;
  };
  const calls = groupCalls(stream.events);
  let callsWritten = false;
  let refusalWritten = false;
  for (const event of stream.events) {
    switch (event.type) {
      case 'text':
        if (open?.kind !== 'text') {
          close();
          open = { kind: 'text', id: `msg_0${++items}a6e2f3c4d5b6a7980`, text: '' };
          writer.openMessage(open.id, writer.nextOutputIndex());
        }
        open.text += event.text;
        writer.textDelta(open.id, event.text);
        break;
      case 'reasoning':
        if (open?.kind !== 'reasoning') {
          close();
          open = { kind: 'reasoning', id: `rs_0${++items}b7f3a4d5e6c7b8091`, text: '' };
          writer.openReasoning(open.id);
          writer.summaryPart();
        }
        open.text += event.text;
        writer.summaryDelta(event.text);
        break;
      case 'tool-call-start':
      case 'tool-call-delta': {
        if (callsWritten) break;
        close();
        callsWritten = true;
        calls.forEach((call, position) => {
          const itemId = `fc_0${++items}c8a4b5e6f7d8c9102`;
          const index = writer.openCall(itemId, call.toolCallId, call.toolName);
          for (const piece of call.pieces) writer.argumentsDelta(itemId, index, piece);
          const last = position === calls.length - 1;
          if (complete || !last)
            writer.closeCall(itemId, call.toolCallId, call.toolName, index, call.pieces.join(''));
        });
        break;
      }
      case 'refusal': {
        // One message holds the whole refusal, as OpenAI sends it.
        if (refusalWritten) break;
        close();
        refusalWritten = true;
        const pieces = stream.events.flatMap((scripted) =>
          scripted.type === 'refusal' ? [scripted.text] : [],
        );
        writer.refusal(`msg_0${++items}d9b5c6f7a8e9d0213`, pieces);
        break;
      }
      default:
        // The Responses API has no reasoning signatures or redacted reasoning.
        break;
    }
  }
  if (complete) {
    close();
    const usage = stream.usage ?? zeroUsage;
    const stopReason: StopReason = scriptedStopReason(stream);
    if (stopReason === 'max-tokens') writer.incomplete('max_output_tokens', usage);
    else if (stopReason === 'content-filter') writer.incomplete('content_filter', usage);
    else if (stopReason === 'end-turn' || stopReason === 'tool-use' || stopReason === 'refusal')
      writer.completed(usage);
    else throw new Error(`The Responses API has no way to end with "${stopReason}" here`);
  }
  flush();
  return {
    status: 200,
    headers: { ...responsesStreamHeaders(), ...stream.headers },
    body: steps,
    ending: complete || ending === 'close' ? 'end' : ending,
  };
}

function groupCalls(
  events: readonly ScriptedEvent[],
): { toolCallId: string; toolName: string; pieces: string[] }[] {
  const calls = new Map<string, { toolCallId: string; toolName: string; pieces: string[] }>();
  for (const event of events) {
    if (event.type === 'tool-call-start') {
      calls.set(event.toolCallId, { toolCallId: event.toolCallId, toolName: event.toolName, pieces: [] });
    } else if (event.type === 'tool-call-delta') {
      calls.get(event.toolCallId)?.pieces.push(event.argumentsDelta);
    }
  }
  return [...calls.values()];
}

/** The Responses wire for `@lunation/provider-testkit`; error bodies are the same as Chat Completions'. */
export const openaiResponsesWire: ProviderWire = {
  encode: (response) =>
    response.type === 'stream'
      ? encodeStream(response)
      : {
          status: response.status,
          headers: {
            'content-type': 'application/json; charset=utf-8',
            'x-request-id': 'req_5d6e7f8a9b0c1d2e3f4a',
            ...response.headers,
          },
          body: JSON.stringify(errorBody(response.status, response.message, response.contextOverflow)),
        },
  capabilities: {
    reasoning: true,
    reasoningSignature: false,
    redactedReasoning: false,
    interleavedToolCalls: false,
    refusal: true,
    stopReasons: ['end-turn', 'max-tokens', 'tool-use', 'content-filter'],
  },
};

/** An HTTP 200 SSE response from a writer's events. */
export function responsesSse(
  writer: ResponsesStreamWriter,
  ending: 'end' | 'reset' | 'hang' = 'end',
): HttpResponseScript {
  return { status: 200, headers: responsesStreamHeaders(), body: [...writer.events], ending };
}
