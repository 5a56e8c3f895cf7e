import {
  type JsonObject,
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
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { buildRequest, type MaxTokensField, type ReasoningHistory } from './build-request.js';
import { mapError } from './map-error.js';
import { parseStream } from './parse-stream.js';
import type { StrictSchemas } from './strict-schema.js';

/** The part of an `OpenAI` client the adapter uses. */
export type OpenAIClient = Pick<OpenAI, 'chat'>;

/** Options of {@link OpenAIModel}. */
export interface OpenAIModelOptions {
  /** The model id, e.g. `gpt-4.1-mini`; `overrides.model` replaces it per call. */
  model: string;
  /** @default process.env.OPENAI_API_KEY */
  apiKey?: string;
  /** An OpenAI-compatible server, e.g. `http://localhost:11434/v1`. @default 'https://api.openai.com/v1' */
  baseURL?: string;
  organization?: string;
  project?: string;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** Milliseconds to wait for the response headers of one attempt. @default 600000 */
  timeout?: number;
  /**
   * Most milliseconds between two streamed parts (and before the first) before the stream counts as stalled:
   * a typed `timeout` (retried) before the first part, `stream-interrupted` after. 0 disables.
   * @default 120000
   */
  streamIdleTimeoutMs?: number;
  /** Retries of retryable errors before the first streamed part; shorthand for `retry.maxRetries`. @default 2 */
  maxRetries?: number;
  /** Backoff settings; the SDK's own retries are always off. */
  retry?: RetryOptions;
  /**
   * The body field for `overrides.maxTokens`. OpenAI deprecated `max_tokens` (reasoning models reject
   * it); some older OpenAI-compatible servers only know `max_tokens`.
   * @default 'max_completion_tokens'
   */
  maxTokensField?: MaxTokensField;
  /**
   * Which reasoning parts go back as `reasoning_content` on assistant messages. DeepSeek's thinking mode and
   * Moonshot's Kimi K2 need the reasoning of the assistant turns that called tools sent back while the tool
   * loop runs; OpenAI takes none.
   * @default 'tool-call-turns' when the server (the injected client's `baseURL`, the `baseURL` option or
   * OPENAI_BASE_URL) is api.deepseek.com or api.moonshot.ai / .cn, otherwise 'omit'
   */
  reasoningHistory?: ReasoningHistory;
  /**
   * Whether `responseFormat` asks for strict Structured Outputs (`json_schema.strict`). `'auto'` sets it when the
   * schema meets strict mode's rules (every object closed with `additionalProperties: false` and all
   * properties required); otherwise the server treats the schema as a hint and the runtime validates.
   * @default 'auto'
   */
  strictSchemas?: StrictSchemas;
  /** A ready client; `apiKey`, `baseURL`, `organization`, `project` and `headers` are then ignored. */
  client?: OpenAIClient;
  /** The id under `provider` and the key of `request.providerOptions`. @default 'openai' */
  providerId?: string;
}

/**
 * A ModelProvider on OpenAI's Chat Completions API (streaming), through the official `openai` SDK.
 * Works with OpenAI and with OpenAI-compatible servers via `baseURL`.
 */
export class OpenAIModel implements ModelProvider {
  readonly specificationVersion = 'v1';
  readonly provider: string;
  readonly modelId: string;
  readonly #options: OpenAIModelOptions;
  readonly #policy: RetryPolicy;
  #client: OpenAIClient | undefined;

  constructor(options: OpenAIModelOptions) {
    if (!options.model) {
      throw new LunationError(
        'invalid-argument',
        'OpenAIModel needs a model id, e.g. { model: "gpt-4.1-mini" }',
      );
    }
    this.#options = options;
    this.#policy = resolveRetryPolicy(options.retry, options.maxRetries);
    this.#client = options.client;
    this.provider = options.providerId ?? 'openai';
    this.modelId = options.model;
  }

  stream(request: ModelRequest, options: ModelCallOptions = {}): AsyncIterable<ModelStreamPart> {
    return this.#stream(request, options.signal);
  }

  async *#stream(request: ModelRequest, signal: AbortSignal | undefined): AsyncGenerator<ModelStreamPart> {
    const label = this.#label(request.overrides?.model ?? this.modelId);
    const body = buildRequest(request, {
      model: this.modelId,
      maxTokensField: this.#options.maxTokensField ?? 'max_completion_tokens',
      reasoningHistory: this.#options.reasoningHistory ?? defaultReasoningHistory(this.#serverURL()),
      strictSchemas: this.#options.strictSchemas ?? 'auto',
      providerOptions: request.providerOptions?.[this.provider] as JsonObject | undefined,
      providerId: this.provider,
    });
    yield* streamWithRetries({
      policy: this.#policy,
      signal,
      cancelled: () => cancelledError(label, signal),
      attempt: (attemptSignal) => this.#attempt(body, label, attemptSignal),
      ...(this.#options.streamIdleTimeoutMs === undefined
        ? {}
        : { idleTimeoutMs: this.#options.streamIdleTimeoutMs }),
    });
  }

  async *#attempt(
    body: ChatCompletionCreateParamsStreaming,
    label: ProviderLabel,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<ModelStreamPart> {
    let chunks: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>;
    try {
      chunks = await this.#getClient().chat.completions.create(body, {
        signal,
        maxRetries: 0,
        ...(this.#options.timeout === undefined ? {} : { timeout: this.#options.timeout }),
      });
    } catch (error) {
      throw mapError(error, label, 'request');
    }
    try {
      yield* parseStream(chunks, label);
    } catch (error) {
      throw mapError(error, label, 'stream');
    }
  }

  #getClient(): OpenAIClient {
    this.#client ??= new OpenAI({
      apiKey: this.#options.apiKey,
      baseURL: this.#options.baseURL,
      organization: this.#options.organization,
      project: this.#options.project,
      defaultHeaders: this.#options.headers,
      timeout: this.#options.timeout,
      maxRetries: 0,
    });
    return this.#client;
  }

  /**
   * The server the calls go to: the injected client's `baseURL`, else the `baseURL` option, else
   * OPENAI_BASE_URL (as the SDK reads it).
   */
  #serverURL(): string | undefined {
    const { baseURL, client } = this.#options;
    if (client !== undefined) {
      const clientURL = (client as { baseURL?: unknown }).baseURL;
      return typeof clientURL === 'string' ? clientURL : undefined;
    }
    return baseURL ?? (globalThis.process?.env?.OPENAI_BASE_URL?.trim() || undefined);
  }

  #label(model: string): ProviderLabel {
    const { baseURL, client } = this.#options;
    const name =
      baseURL === undefined || client !== undefined ? 'OpenAI' : `OpenAI-compatible server at ${baseURL}`;
    return { name, model, apiKeyHint: 'the `apiKey` option or OPENAI_API_KEY' };
  }
}

/** Servers known to need the reasoning of tool-call turns back. */
const REASONING_ECHO_HOSTS = ['api.deepseek.com', 'api.moonshot.ai', 'api.moonshot.cn'];

function defaultReasoningHistory(baseURL: string | undefined): ReasoningHistory {
  if (baseURL === undefined) return 'omit';
  let host: string;
  try {
    host = new URL(baseURL).hostname;
  } catch {
    return 'omit';
  }
  return REASONING_ECHO_HOSTS.includes(host) ? 'tool-call-turns' : 'omit';
}
