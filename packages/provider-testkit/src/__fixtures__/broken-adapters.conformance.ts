import { runProviderConformance } from '../run-provider-conformance.js';
import { type NdjsonChatBreakage, NdjsonChatModel } from './ndjson-chat-model.js';
import { ndjsonChatCapabilities, ndjsonChatStructuredOutput, ndjsonChatWire } from './ndjson-chat-wire.js';

// Run by conformance-catches-broken-adapters.test.ts in a child vitest: every suite here must fail somewhere.
const breakages: NdjsonChatBreakage[] = [
  'drop-output-tokens',
  'drop-arguments',
  'invent-cache-reads',
  'drop-response-format',
];
for (const breakage of breakages) {
  runProviderConformance({
    name: `broken:${breakage}`,
    tsconfig: false,
    wire: ndjsonChatWire(),
    structuredOutput: ndjsonChatStructuredOutput,
    createModel: ({ baseURL, maxRetries }) => new NdjsonChatModel({ baseURL, maxRetries, breakage }),
  });
}

// An honest adapter on a wire that claims to stream calls in pieces when it sends them whole.
runProviderConformance({
  name: 'misdeclared:streamed-arguments',
  tsconfig: false,
  wire: ndjsonChatWire({ ...ndjsonChatCapabilities, toolCallArguments: 'streamed' }),
  createModel: ({ baseURL, maxRetries }) => new NdjsonChatModel({ baseURL, maxRetries }),
});
