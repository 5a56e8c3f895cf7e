import { runProviderConformance } from '@lunation/provider-testkit';
import { openaiResponsesWire } from './__fixtures__/openai-responses-wire.js';
import { OpenAIResponsesModel } from './openai-responses-model.js';

runProviderConformance({
  name: 'OpenAIResponsesModel',
  wire: openaiResponsesWire,
  createModel: ({ baseURL, maxRetries }) =>
    new OpenAIResponsesModel({
      model: 'gpt-5-mini',
      apiKey: 'sk-test',
      baseURL: `${baseURL}/v1`,
      retry: { maxRetries, initialDelayMs: 1, maxDelayMs: 4 },
    }),
});
