import { NdjsonChatModel } from './__fixtures__/ndjson-chat-model.js';
import { ndjsonChatStructuredOutput, ndjsonChatWire } from './__fixtures__/ndjson-chat-wire.js';
import { runProviderConformance } from './run-provider-conformance.js';

// A vendor that sends each tool call whole and reports no cache or reasoning counts passes by declaring so.
runProviderConformance({
  name: 'NdjsonChatModel (whole tool calls, no cache or reasoning counts)',
  wire: ndjsonChatWire(),
  structuredOutput: ndjsonChatStructuredOutput,
  createModel: ({ baseURL, maxRetries }) => new NdjsonChatModel({ baseURL, maxRetries }),
});
