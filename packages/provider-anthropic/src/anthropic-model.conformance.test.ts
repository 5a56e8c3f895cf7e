import { runProviderConformance } from '@lunation/provider-testkit';
import { anthropicWire } from '@lunation/provider-testkit/wires/anthropic-messages';
import { AnthropicModel } from './anthropic-model.js';

runProviderConformance({
  name: 'AnthropicModel',
  wire: anthropicWire,
  /**
   * `output_config.format`, without the integer bounds (zod's safe-integer `minimum` / `maximum`) that the
   * Messages API rejects with a 400 ("For 'integer' type, property 'minimum' is not supported").
   */
  structuredOutput: {
    sentSchema: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        celsius: { type: 'integer' },
        conditions: { type: 'string', enum: ['sunny', 'cloudy', 'rain'] },
      },
      required: ['city', 'celsius', 'conditions'],
      additionalProperties: false,
    },
    requestFields: (schema) => ({ output_config: { format: { type: 'json_schema', schema } } }),
  },
  createModel: ({ baseURL, maxRetries }) =>
    new AnthropicModel({
      model: 'claude-sonnet-5-5',
      apiKey: 'sk-ant-test',
      baseURL,
      retry: { maxRetries, initialDelayMs: 1, maxDelayMs: 4 },
    }),
});
