import type {
  Message,
  ModelCallOptions,
  ModelProvider,
  ModelRequest,
  ModelStreamPart,
} from '@lunation/contract';
import {
  cancelledError,
  errorCodeForErrorType,
  errorCodeForStatus,
  type ProviderLabel,
  providerError,
  resolveRetryPolicy,
  streamInterruptedError,
  streamWithRetries,
} from '@lunation/contract/provider-utils';

/** Deliberate faults, to prove the conformance suite catches them. */
export type NdjsonChatBreakage =
  /** Reports 0 output tokens although the wire carries `eval_count`. */
  | 'drop-output-tokens'
  /** Reports every call with `{}` arguments. */
  | 'drop-arguments'
  /** Reports the whole prompt as a cache read although the wire has no cache count. */
  | 'invent-cache-reads'
  /** Sends no `format` although the request asks for a JSON answer. */
  | 'drop-response-format';

export interface NdjsonChatModelOptions {
  baseURL: string;
  maxRetries: number;
  breakage?: NdjsonChatBreakage;
}

interface ChatLine {
  error?: string;
  message?: {
    content?: string;
    thinking?: string;
    tool_calls?: Array<{ id?: string; function: { name: string; arguments: unknown } }>;
  };
  done?: boolean;
  done_reason?: string;
  prompt_eval_count?: number;
  eval_count?: number;
}

/** A minimal adapter for the Ollama-style NDJSON wire, on `fetch`: the kit's own example of a whole-call vendor. */
export class NdjsonChatModel implements ModelProvider {
  readonly specificationVersion = 'v1';
  readonly provider = 'ndjson-chat';
  readonly modelId = 'qwen3:8b';
  readonly #options: NdjsonChatModelOptions;
  readonly #label: ProviderLabel = { name: 'NDJSON chat server', model: 'qwen3:8b', apiKeyHint: 'no key' };

  constructor(options: NdjsonChatModelOptions) {
    this.#options = options;
  }

  stream(request: ModelRequest, options: ModelCallOptions = {}): AsyncIterable<ModelStreamPart> {
    return streamWithRetries({
      policy: resolveRetryPolicy({ initialDelayMs: 1, maxDelayMs: 4 }, this.#options.maxRetries),
      signal: options.signal,
      cancelled: () => cancelledError(this.#label, options.signal),
      attempt: (signal) => this.#attempt(request, signal),
    });
  }

  async *#attempt(request: ModelRequest, signal: AbortSignal): AsyncGenerator<ModelStreamPart> {
    const label = this.#label;
    let response: Response;
    try {
      response = await fetch(`${this.#options.baseURL}/api/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: this.modelId,
          stream: true,
          messages: request.messages.map(toChatMessage),
          tools: request.tools.map((tool) => ({ type: 'function', function: tool })),
          ...(request.responseFormat && this.#options.breakage !== 'drop-response-format'
            ? { format: request.responseFormat.schema }
            : {}),
        }),
        signal,
      });
    } catch (error) {
      throw providerError({
        label,
        code: 'provider-error',
        summary: 'could not be reached',
        apiMessage: String(error),
        cause: error,
      });
    }
    if (!response.ok) {
      const text = await response.text();
      const apiMessage = (JSON.parse(text) as ChatLine).error;
      throw providerError({
        label,
        code: errorCodeForStatus(response.status, text),
        summary: `answered HTTP ${response.status}`,
        apiMessage,
        status: response.status,
        headers: response.headers,
        cause: text,
      });
    }
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let buffered = '';
    let calls = 0;
    try {
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (error) {
          throw streamInterruptedError(label, String(error), error);
        }
        if (chunk.done) break;
        buffered += decoder.decode(chunk.value, { stream: true });
        let newline = buffered.indexOf('\n');
        while (newline >= 0) {
          const text = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          newline = buffered.indexOf('\n');
          if (text.trim() === '') continue;
          const line = JSON.parse(text) as ChatLine;
          if (line.error !== undefined) {
            throw providerError({
              label,
              code: errorCodeForErrorType(undefined, line.error),
              summary: 'sent an error inside the stream',
              apiMessage: line.error,
              cause: line,
            });
          }
          const message = line.message ?? {};
          if (message.thinking) yield { type: 'reasoning-delta', delta: message.thinking };
          if (message.content) yield { type: 'text-delta', delta: message.content };
          for (const call of message.tool_calls ?? []) {
            const toolCallId = call.id ?? `call_${calls}`;
            calls += 1;
            const args =
              this.#options.breakage === 'drop-arguments'
                ? '{}'
                : JSON.stringify(call.function.arguments ?? {});
            yield { type: 'tool-call-start', toolCallId, toolName: call.function.name };
            yield { type: 'tool-call-delta', toolCallId, argumentsDelta: args };
            yield { type: 'tool-call-end', toolCallId, toolName: call.function.name, arguments: args };
          }
          if (line.done) {
            const input = line.prompt_eval_count ?? 0;
            yield {
              type: 'usage',
              usage: {
                inputTokens: input,
                outputTokens: this.#options.breakage === 'drop-output-tokens' ? 0 : (line.eval_count ?? 0),
                cacheReadTokens: this.#options.breakage === 'invent-cache-reads' ? input : 0,
                cacheWriteTokens: 0,
                reasoningTokens: 0,
              },
            };
            yield {
              type: 'finish',
              stopReason: line.done_reason === 'length' ? 'max-tokens' : calls > 0 ? 'tool-use' : 'end-turn',
              rawStopReason: line.done_reason ?? 'stop',
            };
            return;
          }
        }
      }
      throw streamInterruptedError(label, 'the response ended without a `done: true` line');
    } finally {
      await reader.cancel().catch(() => {});
    }
  }
}

function toChatMessage(message: Message): Record<string, unknown> {
  const text = message.content
    .flatMap((part) => ('text' in part && part.type === 'text' ? [part.text] : []))
    .join('');
  return { role: message.role, content: text };
}
