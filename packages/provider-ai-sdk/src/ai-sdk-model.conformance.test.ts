import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { runProviderConformance } from '@lunation/provider-testkit';
import { anthropicWire } from './__fixtures__/anthropic-wire.js';
import { openaiWire } from './__fixtures__/openai-wire.js';
import { AiSdkModel } from './ai-sdk-model.js';

runProviderConformance({
  name: 'AiSdkModel over @ai-sdk/anthropic',
  wire: anthropicWire,
  createModel: ({ baseURL, maxRetries }) =>
    new AiSdkModel({
      model: createAnthropic({ apiKey: 'sk-ant-test', baseURL: `${baseURL}/v1` })('claude-sonnet-4-5'),
      retry: { maxRetries, initialDelayMs: 1, maxDelayMs: 4 },
    }),
});

runProviderConformance({
  name: 'AiSdkModel over @ai-sdk/openai (Chat Completions)',
  wire: openaiWire,
  createModel: ({ baseURL, maxRetries }) =>
    new AiSdkModel({
      model: createOpenAI({ apiKey: 'sk-test', baseURL: `${baseURL}/v1` }).chat('gpt-4.1-mini'),
      retry: { maxRetries, initialDelayMs: 1, maxDelayMs: 4 },
    }),
});
