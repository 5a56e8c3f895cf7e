import Anthropic from '@anthropic-ai/sdk';
import type {
  MessageCreateParamsStreaming,
  RawMessageStreamEvent,
} from '@anthropic-ai/sdk/resources/messages';
import {
  cancelledError,
  type JsonObject,
  LunationError,
  type ModelCallOptions,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamPart,
  type ProviderLabel,
  type RetryOptions,
  type RetryPolicy,
  resolveRetryPolicy,
  streamWithRetries,
} from '@lunation/contract';
import { buildRequest, type ThinkingMode } from './build-request.js';
import { mapError } from './map-error.js';
import { parseStream } from './parse-stream.js';

/** The part of an `Anthropic` client the adapter uses. */
export type AnthropicClient = Pick<Anthropic, 'messages'>;

/** Options of {@link AnthropicModel}. */
export interface AnthropicModelOptions {
  /** The model id, e.g. `claude-sonnet-5-5`; `overrides.model` replaces it per call. */
  model: string;
  /** @default process.env.ANTHROPIC_API_KEY */
  apiKey?: string;
  /** @default 'https://api.anthropic.com' */
  baseURL?: string;
  /** Headers sent with every request, e.g. `anthropic-beta`. */
  headers?: Record<string, string>;
  /** Milliseconds to wait for the response headers of one attempt. @default 600000 */
  timeout?: number;
  /** Retries of retryable errors before the first streamed part; shorthand for `retry.maxRetries`. @default 2 */
  maxRetries?: number;
  /** Backoff settings; the SDK's own retries are always off. */
  retry?: RetryOptions;
  /** `max_tokens` when a request has no `overrides.maxTokens` (the API requires one). @default 4096 */
  maxTokens?: number;
  /**
   * Put `cache_control` breakpoints on the system prompt, the last tool and the last message.
   * `providerOptions.anthropic.promptCache` overrides it per call.
   * @default false
   */
  promptCache?: boolean;
  /**
   * How `overrides.reasoningEffort` becomes thinking: `budget` sends `thinking.budget_tokens`
   * (`thinkingBudgets`), `adaptive` sends `thinking: { type: 'adaptive' }` with `output_config.effort`,
   * `auto` picks adaptive for Claude 4.6 and later (the Claude 5 family rejects budgets).
   * @default 'auto'
   */
  thinking?: ThinkingMode;
  /** A ready client; `apiKey`, `baseURL` and `headers` are then ignored. */
  client?: AnthropicClient;
  /** The id under `provider` and the key of `request.providerOptions`. @default 'anthropic' */
  providerId?: string;
}

/** A ModelProvider on Anthropic's Messages API (streaming), through the official `@anthropic-ai/sdk`. */
export class AnthropicModel implements ModelProvider {
  readonly specificationVersion = 'v1';
  readonly provider: string;
  readonly modelId: string;
  readonly #options: AnthropicModelOptions;
  readonly #policy: RetryPolicy;
  #client: AnthropicClient | undefined;

  constructor(options: AnthropicModelOptions) {
    if (!options.model) {
      throw new LunationError(
        'invalid-argument',
        'AnthropicModel needs a model id, e.g. { model: "claude-sonnet-5-5" }',
      );
    }
    this.#options = options;
    this.#policy = resolveRetryPolicy(options.retry, options.maxRetries);
    this.#client = options.client;
    this.provider = options.providerId ?? 'anthropic';
    this.modelId = options.model;
  }

  stream(request: ModelRequest, options: ModelCallOptions = {}): AsyncIterable<ModelStreamPart> {
    return this.#stream(request, options.signal);
  }

  async *#stream(request: ModelRequest, signal: AbortSignal | undefined): AsyncGenerator<ModelStreamPart> {
    const label = this.#label(request.overrides?.model ?? this.modelId);
    const body = buildRequest(request, {
      model: this.modelId,
      thinkingMode: this.#options.thinking ?? 'auto',
      maxTokens: this.#options.maxTokens ?? 4_096,
      promptCache: this.#options.promptCache ?? false,
      providerOptions: request.providerOptions?.[this.provider] as JsonObject | undefined,
    });
    yield* streamWithRetries({
      policy: this.#policy,
      signal,
      cancelled: () => cancelledError(label, signal),
      attempt: () => this.#attempt(body, label, signal),
    });
  }

  async *#attempt(
    body: MessageCreateParamsStreaming,
    label: ProviderLabel,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<ModelStreamPart> {
    let events: AsyncIterable<RawMessageStreamEvent>;
    try {
      events = await this.#getClient().messages.create(body, {
        signal,
        maxRetries: 0,
        ...(this.#options.timeout === undefined ? {} : { timeout: this.#options.timeout }),
      });
    } catch (error) {
      throw mapError(error, label, 'request');
    }
    try {
      yield* parseStream(events, label);
    } catch (error) {
      throw mapError(error, label, 'stream');
    }
  }

  #getClient(): AnthropicClient {
    this.#client ??= new Anthropic({
      apiKey: this.#options.apiKey,
      baseURL: this.#options.baseURL,
      defaultHeaders: this.#options.headers,
      timeout: this.#options.timeout,
      maxRetries: 0,
    });
    return this.#client;
  }

  #label(model: string): ProviderLabel {
    const { baseURL, client } = this.#options;
    const name =
      baseURL === undefined || client !== undefined
        ? 'Anthropic'
        : `Anthropic-compatible server at ${baseURL}`;
    return { name, model, apiKeyHint: 'the `apiKey` option or ANTHROPIC_API_KEY' };
  }
}
