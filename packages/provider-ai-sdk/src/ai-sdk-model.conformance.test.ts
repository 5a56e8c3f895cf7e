import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { runProviderConformance, structuredOutputSchema } from '@lunation/provider-testkit';
import { anthropicWire } from '@lunation/provider-testkit/wires/anthropic-messages';
import { openaiWire } from '@lunation/provider-testkit/wires/openai-chat';
import { AiSdkModel } from './ai-sdk-model.js';

/**
 * The Messages API as `AiSdkModel` over `@ai-sdk/anthropic` carries it: the V4 stream has no signature or
 * redaction field (the signature travels in `providerMetadata.anthropic`, tested apart) and no refusal part
 * (Anthropic's `refusal` arrives as the unified `content-filter`, without its explanation).
 */
const anthropicV4Wire = {
  ...anthropicWire,
  capabilities: {
    ...anthropicWire.capabilities,
    reasoningSignature: false,
    redactedReasoning: false,
    refusal: false,
    stopReasons: ['end-turn', 'max-tokens', 'tool-use', 'stop-sequence', 'content-filter'] as const,
  },
};
/**
 * Chat Completions as `@ai-sdk/openai`'s chat model reads it: not the `reasoning_content` extension, and no
 * refusal part (the V4 stream drops `delta.refusal`).
 */
const openaiV4Wire = {
  ...openaiWire,
  capabilities: { ...openaiWire.capabilities, reasoning: false, refusal: false },
};

runProviderConformance({
  name: 'AiSdkModel over @ai-sdk/anthropic',
  wire: anthropicV4Wire,
  /** `output_config.format`; the AI SDK moves the constraints Anthropic rejects (zod's integer bounds) into descriptions. */
  structuredOutput: {
    sentSchema: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        celsius: { type: 'integer', description: 'minimum: -9007199254740991; maximum: 9007199254740991.' },
        conditions: { type: 'string', enum: ['sunny', 'cloudy', 'rain'] },
      },
      required: ['city', 'celsius', 'conditions'],
      additionalProperties: false,
    },
    requestFields: (schema) => ({ output_config: { format: { type: 'json_schema', schema } } }),
  },
  createModel: ({ baseURL, maxRetries }) =>
    new AiSdkModel({
      model: createAnthropic({ apiKey: 'sk-ant-test', baseURL: `${baseURL}/v1` })('claude-sonnet-4-5'),
      retry: { maxRetries, initialDelayMs: 1, maxDelayMs: 4 },
    }),
});

runProviderConformance({
  name: 'AiSdkModel over @ai-sdk/openai (Chat Completions)',
  wire: openaiV4Wire,
  /** The AI SDK asks for strict Structured Outputs by default. */
  structuredOutput: {
    sentSchema: structuredOutputSchema,
    requestFields: (schema) => ({
      response_format: { type: 'json_schema', json_schema: { name: 'output', strict: true, schema } },
    }),
  },
  createModel: ({ baseURL, maxRetries }) =>
    new AiSdkModel({
      model: createOpenAI({ apiKey: 'sk-test', baseURL: `${baseURL}/v1` }).chat('gpt-4.1-mini'),
      retry: { maxRetries, initialDelayMs: 1, maxDelayMs: 4 },
    }),
});
