import { runProviderConformance } from '@lunation/provider-testkit';
import { anthropicWire } from '@lunation/provider-testkit/wires/anthropic-messages';
import { AnthropicModel } from './anthropic-model.js';

runProviderConformance({
  name: 'AnthropicModel',
  tsconfig: new URL('../tsconfig.json', import.meta.url),
  wire: anthropicWire,
  createModel: ({ baseURL, maxRetries }) =>
    new AnthropicModel({
      model: 'claude-sonnet-5-5',
      apiKey: 'sk-ant-test',
      baseURL,
      retry: { maxRetries, initialDelayMs: 1, maxDelayMs: 4 },
    }),
});
