import { runProviderConformance, structuredOutputSchema } from '@lunation/provider-testkit';
import { openaiResponsesWire } from './__fixtures__/openai-responses-wire.js';
import { OpenAIResponsesModel } from './openai-responses-model.js';

runProviderConformance({
  name: 'OpenAIResponsesModel',
  // The package is typechecked once, by openai-model.conformance.test.ts.
  tsconfig: false,
  wire: openaiResponsesWire,
  /** Structured Outputs in `text.format`: the schema as it is, strict mode on. */
  structuredOutput: {
    sentSchema: structuredOutputSchema,
    requestFields: (schema) => ({
      text: { format: { type: 'json_schema', name: 'output', schema, strict: true } },
    }),
  },
  createModel: ({ baseURL, maxRetries }) =>
    new OpenAIResponsesModel({
      model: 'gpt-5-mini',
      apiKey: 'sk-test',
      baseURL: `${baseURL}/v1`,
      retry: { maxRetries, initialDelayMs: 1, maxDelayMs: 4 },
    }),
});
