import Anthropic from '@anthropic-ai/sdk';
import type {
  MessageCreateParamsStreaming,
  RawMessageStreamEvent,
} from '@anthropic-ai/sdk/resources/messages';
import {
  addUsage,
  emptyUsage,
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
import { AnswerBuilder } from './answer-builder.js';
import {
  type AnthropicMcpServer,
  type AnthropicServerTool,
  type BuildRequestSettings,
  buildRequest,
  MCP_CONNECTOR_BETA,
  type ThinkingMode,
} from './build-request.js';
import { mapError } from './map-error.js';
import { type ParseState, parseStream, type SegmentOutcome, toStopReason } from './parse-stream.js';

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
  /**
   * Tools Anthropic runs itself, offered beside the agent's tools on every call, in the API's shape:
   * `{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }`,
   * `{ type: 'code_execution_20250825', name: 'code_execution' }`, ... Their calls, results and citations are
   * kept in the answer and sent back as received.
   */
  serverTools?: AnthropicServerTool[];
  /**
   * Remote MCP servers for Anthropic's MCP connector (`mcp_servers`, sent with the `mcp-client-2025-04-04`
   * beta header), e.g. `{ type: 'url', name: 'docs', url: 'https://mcp.example.com/sse' }`.
   */
  mcpServers?: AnthropicMcpServer[];
  /**
   * How many times one answer is continued after `pause_turn` (a long server-tool turn Anthropic paused).
   * The runtime sees one answer; when the limit is reached the answer ends with `end-turn` and
   * `rawStopReason: 'pause_turn'`.
   * @default 8
   */
  maxPauseContinuations?: number;
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
    const settings: BuildRequestSettings = {
      model: this.modelId,
      thinkingMode: this.#options.thinking ?? 'auto',
      maxTokens: this.#options.maxTokens ?? 4_096,
      promptCache: this.#options.promptCache ?? false,
      providerOptions: request.providerOptions?.[this.provider] as JsonObject | undefined,
      providerId: this.provider,
      serverTools: this.#options.serverTools ?? [],
      mcpServers: this.#options.mcpServers ?? [],
    };
    const maxContinuations = this.#options.maxPauseContinuations ?? 8;
    const answer = new AnswerBuilder();
    const state: ParseState = { openUncitedText: false };
    let usage = emptyUsage();
    let container: JsonObject | null = null;
    let continuations = 0;
    let body = buildRequest(request, settings);
    for (;;) {
      let outcome: SegmentOutcome | undefined;
      const parts = streamWithRetries({
        policy: this.#policy,
        signal,
        cancelled: () => cancelledError(label, signal),
        attempt: (attemptSignal) =>
          this.#attempt(body, label, attemptSignal, state, (result) => {
            outcome = result;
          }),
        ...(this.#options.streamIdleTimeoutMs === undefined
          ? {}
          : { idleTimeoutMs: this.#options.streamIdleTimeoutMs }),
      });
      for await (const part of parts) {
        answer.push(part);
        yield part;
      }
      if (outcome === undefined)
        throw new LunationError('internal', 'An Anthropic response ended without an outcome');
      usage = addUsage(usage, outcome.usage);
      container = outcome.container ?? container;
      // A paused server-tool turn is continued by sending the answer so far back, as Anthropic documents.
      if (outcome.stopReason === 'pause_turn' && continuations < maxContinuations && !answer.hasToolCalls) {
        continuations++;
        const paused: ModelRequest = {
          ...request,
          messages: [
            ...request.messages,
            { id: 'paused-turn', role: 'assistant', content: [...answer.content] },
          ],
        };
        body = buildRequest(paused, settings);
        continue;
      }
      const metadata: JsonObject = {};
      if (outcome.stopDetails) metadata.stop_details = outcome.stopDetails;
      if (container) metadata.container = container;
      if (continuations > 0) metadata.pauseContinuations = continuations;
      yield { type: 'usage', usage };
      yield {
        type: 'finish',
        stopReason: toStopReason(outcome.stopReason),
        ...(outcome.stopReason === null ? {} : { rawStopReason: outcome.stopReason }),
        ...(Object.keys(metadata).length > 0 ? { providerMetadata: { [this.provider]: metadata } } : {}),
      };
      return;
    }
  }

  async *#attempt(
    body: MessageCreateParamsStreaming,
    label: ProviderLabel,
    signal: AbortSignal | undefined,
    state: ParseState,
    done: (outcome: SegmentOutcome) => void,
  ): AsyncGenerator<ModelStreamPart> {
    let events: AsyncIterable<RawMessageStreamEvent>;
    try {
      events = await this.#getClient().messages.create(body, {
        signal,
        maxRetries: 0,
        ...(this.#options.timeout === undefined ? {} : { timeout: this.#options.timeout }),
        ...(this.#options.mcpServers?.length ? { headers: { 'anthropic-beta': this.#betaHeader() } } : {}),
      });
    } catch (error) {
      throw mapError(error, label, 'request');
    }
    // A retried attempt starts from the state before it; the state moves on only with a whole response.
    const attemptState = { ...state };
    try {
      done(yield* parseStream(events, label, this.provider, attemptState));
      Object.assign(state, attemptState);
    } catch (error) {
      throw mapError(error, label, 'stream');
    }
  }

  /** The MCP connector's beta, after any `anthropic-beta` the `headers` option already sends. */
  #betaHeader(): string {
    const configured = Object.entries(this.#options.headers ?? {}).find(
      ([name]) => name.toLowerCase() === 'anthropic-beta',
    )?.[1];
    const betas = (configured ?? '')
      .split(',')
      .map((beta) => beta.trim())
      .filter(Boolean);
    if (!betas.includes(MCP_CONNECTOR_BETA)) betas.push(MCP_CONNECTOR_BETA);
    return betas.join(',');
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
