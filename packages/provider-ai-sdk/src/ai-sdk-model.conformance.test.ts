import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { runProviderConformance } from '@lunation/provider-testkit';
import { anthropicWire } from '@lunation/provider-testkit/wires/anthropic-messages';
import { openaiWire } from '@lunation/provider-testkit/wires/openai-chat';
import { AiSdkModel } from './ai-sdk-model.js';

/**
 * The Messages API as `AiSdkModel` over `@ai-sdk/anthropic` carries it: the V4 stream has no signature or
 * redaction field (the signature travels in `providerMetadata.anthropic`, tested apart) and no refusal part
 * (Anthropic's `refusal` arrives as the unified `content-filter`).
 */
const anthropicV4Wire = {
  ...anthropicWire,
  capabilities: {
    ...anthropicWire.capabilities,
    reasoningSignature: false,
    redactedReasoning: false,
    stopReasons: ['end-turn', 'max-tokens', 'tool-use', 'stop-sequence', 'content-filter'] as const,
  },
};
/** Chat Completions as `@ai-sdk/openai`'s chat model reads it: not the `reasoning_content` extension. */
const openaiV4Wire = { ...openaiWire, capabilities: { ...openaiWire.capabilities, reasoning: false } };

runProviderConformance({
  name: 'AiSdkModel over @ai-sdk/anthropic',
  tsconfig: new URL('../tsconfig.json', import.meta.url),
  wire: anthropicV4Wire,
  createModel: ({ baseURL, maxRetries }) =>
    new AiSdkModel({
      model: createAnthropic({ apiKey: 'sk-ant-test', baseURL: `${baseURL}/v1` })('claude-sonnet-4-5'),
      retry: { maxRetries, initialDelayMs: 1, maxDelayMs: 4 },
    }),
});

runProviderConformance({
  name: 'AiSdkModel over @ai-sdk/openai (Chat Completions)',
  wire: openaiV4Wire,
  createModel: ({ baseURL, maxRetries }) =>
    new AiSdkModel({
      model: createOpenAI({ apiKey: 'sk-test', baseURL: `${baseURL}/v1` }).chat('gpt-4.1-mini'),
      retry: { maxRetries, initialDelayMs: 1, maxDelayMs: 4 },
    }),
});
