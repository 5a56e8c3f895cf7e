import type { LanguageModelV4, LanguageModelV4StreamPart, SharedV4ProviderOptions } from '@ai-sdk/provider';
import {
  LunationError,
  type ModelCallOptions,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamPart,
} from '@lunation/contract';
import {
  cancelledError,
  type ProviderLabel,
  type RetryOptions,
  type RetryPolicy,
  resolveRetryPolicy,
  streamWithRetries,
} from '@lunation/contract/provider-utils';
import { mapError } from './map-error.js';
import { parseStream } from './parse-stream.js';
import { toCallOptions } from './to-call-options.js';

/** Options of {@link AiSdkModel}. */
export interface AiSdkModelOptions {
  /** An AI SDK language model (specification `v4`), e.g. `anthropic('claude-sonnet-5-5')` or `openai('gpt-5')`. */
  model: LanguageModelV4;
  /**
   * The Lunation provider id (`provider`, and the `provider` of the `provider-content` parts this bridge keeps).
   * @default the AI SDK provider's name before the first dot, e.g. `anthropic` for `anthropic.messages`
   */
  providerId?: string;
  /**
   * The model for a request's `overrides.model` when it differs from `model.modelId`, e.g.
   * `(id) => anthropic(id)`. Without it such a request is an `invalid-argument` error.
   */
  resolveModel?: (modelId: string) => LanguageModelV4;
  /**
   * Which V4 `custom` parts (provider-specific blocks, e.g. `anthropic.fallback`) are kept in the answer, as
   * `provider-content` sent back on later calls.
   * @default every kind except `*.message_start` (per-response bookkeeping whose data the finish metadata has)
   */
  keepCustomPart?: (kind: string) => boolean;
  /**
   * AI SDK provider options sent with every call, under the request's own `providerOptions` (which win key by
   * key), e.g. `{ openai: { strictJsonSchema: false } }` for output schemas with optional properties.
   */
  providerOptions?: SharedV4ProviderOptions;
  /** Headers sent with every call (the AI SDK model's own headers still apply). */
  headers?: Record<string, string>;
  /**
   * Most milliseconds between two streamed parts (and before the first) before the stream counts as stalled:
   * a typed `timeout` (retried) before the first part, `stream-interrupted` after. 0 disables.
   * @default 120000
   */
  streamIdleTimeoutMs?: number;
  /** Retries of retryable errors before the first streamed part; shorthand for `retry.maxRetries`. @default 2 */
  maxRetries?: number;
  /** Backoff settings (a V4 model does not retry by itself). */
  retry?: RetryOptions;
}

/**
 * A ModelProvider on any AI SDK `LanguageModelV4`: contract messages become the V4 prompt, V4 stream parts become
 * contract parts, and provider metadata travels both ways so signatures and item ids survive a resume.
 */
export class AiSdkModel implements ModelProvider {
  readonly specificationVersion = 'v1';
  readonly provider: string;
  readonly modelId: string;
  readonly #options: AiSdkModelOptions;
  readonly #policy: RetryPolicy;

  constructor(options: AiSdkModelOptions) {
    const model = options.model as Partial<LanguageModelV4> | undefined;
    if (model?.specificationVersion !== 'v4' || typeof model.doStream !== 'function') {
      throw new LunationError(
        'invalid-argument',
        `AiSdkModel needs an AI SDK language model of specification v4 (from @ai-sdk/* 4.x, AI SDK 7), got ${
          model?.specificationVersion === undefined
            ? String(model)
            : `specification ${model.specificationVersion}`
        }; upgrade the AI SDK provider package.`,
      );
    }
    this.#options = options;
    this.#policy = resolveRetryPolicy(options.retry, options.maxRetries);
    this.provider = options.providerId ?? options.model.provider.split('.')[0] ?? options.model.provider;
    this.modelId = options.model.modelId;
  }

  stream(request: ModelRequest, options: ModelCallOptions = {}): AsyncIterable<ModelStreamPart> {
    return this.#stream(request, options.signal);
  }

  async *#stream(request: ModelRequest, signal: AbortSignal | undefined): AsyncGenerator<ModelStreamPart> {
    const model = this.#modelFor(request.overrides?.model);
    const label: ProviderLabel = {
      name: `AI SDK model ${model.provider}`,
      model: model.modelId,
      apiKeyHint: "the AI SDK provider's `apiKey` setting or its environment variable",
    };
    const callOptions = toCallOptions(request, this.provider);
    const defaults = this.#options.providerOptions;
    if (defaults !== undefined)
      callOptions.providerOptions = withDefaults(defaults, callOptions.providerOptions);
    yield* streamWithRetries({
      policy: this.#policy,
      signal,
      cancelled: () => cancelledError(label, signal),
      attempt: (attemptSignal) => this.#attempt(model, callOptions, label, attemptSignal),
      ...(this.#options.streamIdleTimeoutMs === undefined
        ? {}
        : { idleTimeoutMs: this.#options.streamIdleTimeoutMs }),
    });
  }

  async *#attempt(
    model: LanguageModelV4,
    callOptions: ReturnType<typeof toCallOptions>,
    label: ProviderLabel,
    signal: AbortSignal,
  ): AsyncGenerator<ModelStreamPart> {
    let stream: ReadableStream<LanguageModelV4StreamPart>;
    try {
      const result = await model.doStream({
        ...callOptions,
        abortSignal: signal,
        ...(this.#options.headers === undefined ? {} : { headers: this.#options.headers }),
      });
      stream = result.stream;
    } catch (error) {
      throw mapError(error, label, 'request');
    }
    const reader = stream.getReader();
    try {
      yield* parseStream(read(reader), label, this.provider, this.#options.keepCustomPart ?? keepByDefault);
    } catch (error) {
      throw mapError(error, label, 'stream');
    } finally {
      // Stops the HTTP stream when the consumer leaves early or the stream failed.
      reader.cancel().catch(() => {});
      reader.releaseLock();
    }
  }

  #modelFor(modelId: string | undefined): LanguageModelV4 {
    const { model, resolveModel } = this.#options;
    if (modelId === undefined || modelId === model.modelId) return model;
    if (resolveModel !== undefined) return resolveModel(modelId);
    throw new LunationError(
      'invalid-argument',
      `AiSdkModel wraps model "${model.modelId}" and cannot switch to "${modelId}" (overrides.model); pass a \`resolveModel\` option or register that model as its own AiSdkModel.`,
    );
  }
}

function withDefaults(
  defaults: SharedV4ProviderOptions,
  options: SharedV4ProviderOptions | undefined,
): SharedV4ProviderOptions {
  const merged: SharedV4ProviderOptions = { ...defaults };
  for (const [provider, values] of Object.entries(options ?? {})) {
    merged[provider] = { ...defaults[provider], ...values };
  }
  return merged;
}

function keepByDefault(kind: string): boolean {
  return !kind.endsWith('.message_start');
}

async function* read<T>(reader: ReadableStreamDefaultReader<T>): AsyncGenerator<T> {
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}
