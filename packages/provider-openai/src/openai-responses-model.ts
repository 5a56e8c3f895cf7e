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
import OpenAI from 'openai';
import type {
  ResponseCreateParamsStreaming,
  ResponseStreamEvent,
} from 'openai/resources/responses/responses';
import { mapError } from './map-error.js';
import {
  buildResponsesRequest,
  type OpenAIHostedTool,
  type ReasoningSummary,
} from './responses-build-request.js';
import { parseResponsesStream } from './responses-parse-stream.js';
import type { StrictSchemas } from './strict-schema.js';

/** The part of an `OpenAI` client the Responses adapter uses. */
export type OpenAIResponsesClient = Pick<OpenAI, 'responses'>;

/** Options of {@link OpenAIResponsesModel}. */
export interface OpenAIResponsesModelOptions {
  /** The model id, e.g. `gpt-5-mini`; `overrides.model` replaces it per call. */
  model: string;
  /** @default process.env.OPENAI_API_KEY */
  apiKey?: string;
  /** @default 'https://api.openai.com/v1' */
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
   * Whether OpenAI keeps the response (`store`). Off by default: every call sends the whole history, and
   * reasoning travels as `encrypted_content` kept on the reasoning parts, so a run resumed from the Lunation
   * store in another process keeps its reasoning without server-side state.
   * @default false
   */
  store?: boolean;
  /**
   * Whether the model reasons, so `reasoning` settings are sent (and encrypted reasoning asked for).
   * @default true for o-series, gpt-5 and codex model ids
   */
  reasoningModel?: boolean;
  /** Reasoning summaries to stream as reasoning parts; `null` asks for none. @default 'auto' */
  reasoningSummary?: ReasoningSummary | null;
  /**
   * Asks for `reasoning.encrypted_content` (`include`) on reasoning models.
   * @default true when `store` is false
   */
  includeEncryptedReasoning?: boolean;
  /**
   * Strict mode for function tools and `responseFormat`. `'auto'` sets `strict: true` for each schema that meets
   * strict mode's rules (every object closed with `additionalProperties: false`, all properties required).
   * @default 'auto'
   */
  strictSchemas?: StrictSchemas;
  /** Tools that run on OpenAI's side, e.g. `[{ type: 'web_search' }]`; their items come back as `provider-content`. */
  hostedTools?: OpenAIHostedTool[];
  /** A ready client; `apiKey`, `baseURL`, `organization`, `project` and `headers` are then ignored. */
  client?: OpenAIResponsesClient;
  /** The id under `provider`, the key of `request.providerOptions` and of parts' `providerMetadata`. @default 'openai' */
  providerId?: string;
}

const REASONING_MODEL = /^(?:[\w-]+\/)?(?:o\d|gpt-5|codex)/i;

/**
 * A ModelProvider on OpenAI's Responses API (`POST /responses`, streaming), through the official `openai` SDK:
 * reasoning items with encrypted content, hosted tools, refusals and Structured Outputs.
 */
export class OpenAIResponsesModel implements ModelProvider {
  readonly specificationVersion = 'v1';
  readonly provider: string;
  readonly modelId: string;
  readonly #options: OpenAIResponsesModelOptions;
  readonly #policy: RetryPolicy;
  #client: OpenAIResponsesClient | undefined;

  constructor(options: OpenAIResponsesModelOptions) {
    if (!options.model) {
      throw new LunationError(
        'invalid-argument',
        'OpenAIResponsesModel needs a model id, e.g. { model: "gpt-5-mini" }',
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
    const model = request.overrides?.model ?? this.modelId;
    const label = this.#label(model);
    const store = this.#options.store ?? false;
    const body = buildResponsesRequest(request, {
      model: this.modelId,
      providerId: this.provider,
      store,
      reasoningModel: this.#options.reasoningModel ?? REASONING_MODEL.test(model),
      includeEncryptedReasoning: this.#options.includeEncryptedReasoning ?? !store,
      reasoningSummary:
        this.#options.reasoningSummary === undefined ? 'auto' : this.#options.reasoningSummary,
      strictSchemas: this.#options.strictSchemas ?? 'auto',
      hostedTools: this.#options.hostedTools ?? [],
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
    body: ResponseCreateParamsStreaming,
    label: ProviderLabel,
    signal: AbortSignal,
  ): AsyncGenerator<ModelStreamPart> {
    let events: AsyncIterable<ResponseStreamEvent>;
    try {
      events = await this.#getClient().responses.create(body, {
        signal,
        maxRetries: 0,
        ...(this.#options.timeout === undefined ? {} : { timeout: this.#options.timeout }),
      });
    } catch (error) {
      throw mapError(error, label, 'request');
    }
    try {
      yield* parseResponsesStream(events, label, this.provider);
    } catch (error) {
      throw mapError(error, label, 'stream');
    }
  }

  #getClient(): OpenAIResponsesClient {
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

  #label(model: string): ProviderLabel {
    const { baseURL, client } = this.#options;
    const name =
      baseURL === undefined || client !== undefined
        ? 'OpenAI Responses API'
        : `Responses API server at ${baseURL}`;
    return { name, model, apiKeyHint: 'the `apiKey` option or OPENAI_API_KEY' };
  }
}
