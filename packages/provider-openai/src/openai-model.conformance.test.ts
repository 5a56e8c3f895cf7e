import { runProviderConformance, structuredOutputSchema } from '@lunation/provider-testkit';
import { openaiWire } from '@lunation/provider-testkit/wires/openai-chat';
import { OpenAIModel } from './openai-model.js';

runProviderConformance({
  name: 'OpenAIModel',
  wire: openaiWire,
  /** Structured Outputs: the schema as it is, strict mode on (the schema is closed and all properties required). */
  structuredOutput: {
    sentSchema: structuredOutputSchema,
    requestFields: (schema) => ({
      response_format: { type: 'json_schema', json_schema: { name: 'output', schema, strict: true } },
    }),
  },
  createModel: ({ baseURL, maxRetries }) =>
    new OpenAIModel({
      model: 'gpt-4.1-mini',
      apiKey: 'sk-test',
      baseURL: `${baseURL}/v1`,
      retry: { maxRetries, initialDelayMs: 1, maxDelayMs: 4 },
    }),
});
