import { runProviderConformance } from '@lunation/provider-testkit';
import { openaiWire } from '@lunation/provider-testkit/wires/openai-chat';
import { OpenAIModel } from './openai-model.js';

runProviderConformance({
  name: 'OpenAIModel',
  tsconfig: new URL('../tsconfig.json', import.meta.url),
  wire: openaiWire,
  createModel: ({ baseURL, maxRetries }) =>
    new OpenAIModel({
      model: 'gpt-4.1-mini',
      apiKey: 'sk-test',
      baseURL: `${baseURL}/v1`,
      retry: { maxRetries, initialDelayMs: 1, maxDelayMs: 4 },
    }),
});
