import {
  blockDelta,
  blockStart,
  blockStop,
  event,
  messageStart,
  messageStop,
  ping,
} from '@lunation/provider-testkit/wires/anthropic-messages';

/**
 * Recorded-style Messages API streams for server tools, MCP and refusals: the event order, block shapes and
 * fields as Anthropic streams them (encrypted payloads shortened).
 */

export const searchId = 'srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k';

export const webSearchResult = {
  type: 'web_search_tool_result',
  tool_use_id: searchId,
  content: [
    {
      type: 'web_search_result',
      title: 'The all-new Apple Ginza opens this Friday, September 26, in Tokyo - Apple',
      url: 'https://www.apple.com/newsroom/2025/09/the-all-new-apple-ginza-opens-this-friday-september-26-in-tokyo/',
      encrypted_content: 'Ev4eCioICBgCIiRiY2JjZWJjMy1lYTFhLTRmNjktYTUwMy01YzgwNWU1Y2U0NzESDCXTWGG2iGt',
      page_age: null,
    },
    {
      type: 'web_search_result',
      title: "Fang Junyu's Technology Weekly - September 26, 2025 - Future",
      url: 'https://future.forem.com/junyu_fang_a216509a97501d/fang-junyus-technology-weekly-september-26-2025-2ndd',
      encrypted_content: 'Ev0YCioICBgCIiRiY2JjZWJjMy1lYTFhLTRmNjktYTUwMy01YzgwNWU1Y2U0NzESDJET',
      page_age: '3 hours ago',
    },
  ],
};

export const ginzaCitation = {
  type: 'web_search_result_location',
  cited_text:
    'Opened in 2003 as Apple’s first store outside the U.S., Apple Ginza now returns in an all-new four-story design...',
  url: 'https://www.apple.com/newsroom/2025/09/the-all-new-apple-ginza-opens-this-friday-september-26-in-tokyo/',
  title: 'The all-new Apple Ginza opens this Friday, September 26, in Tokyo - Apple',
  encrypted_index: 'Eo8BCioICBgCIiRiY2JjZWJjMy1lYTFhLTRmNjktYTUwMy01YzgwNWU1Y2U0NzESDInhmZCA7JQw90CQiBoM',
};

export const foldableCitation = {
  type: 'web_search_result_location',
  cited_text: 'Apple is considering building a pilot production line for a foldable iPhone in Taiwan...',
  url: 'https://future.forem.com/junyu_fang_a216509a97501d/fang-junyus-technology-weekly-september-26-2025-2ndd',
  title: "Fang Junyu's Technology Weekly - September 26, 2025 - Future",
  encrypted_index: 'EpEBCioICBgCIiRiY2JjZWJjMy1lYTFhLTRmNjktYTUwMy01YzgwNWU1Y2U0NzESDN9RRNtj1Qp6RaNu1xoM',
};

/** A web search call (its query streamed in pieces) and its result, from block `index` on. */
export function webSearchBlocks(index: number): string[] {
  return [
    blockStart(index, { type: 'server_tool_use', id: searchId, name: 'web_search', input: {} }),
    blockDelta(index, { type: 'input_json_delta', partial_json: '' }),
    blockDelta(index, { type: 'input_json_delta', partial_json: '{"query": "t' }),
    blockDelta(index, { type: 'input_json_delta', partial_json: 'ech news today September 26 2025"}' }),
    blockStop(index),
    blockStart(index + 1, webSearchResult),
    blockStop(index + 1),
  ];
}

/** Uncited text, a cited sentence, a one-space uncited block, and a second cited sentence. */
export function citedAnswerBlocks(index: number): string[] {
  return [
    blockStart(index, { type: 'text', text: '' }),
    blockDelta(index, { type: 'text_delta', text: 'Here is the news.\n\n' }),
    blockStop(index),
    blockStart(index + 1, { citations: [], type: 'text', text: '' }),
    blockDelta(index + 1, { type: 'citations_delta', citation: ginzaCitation }),
    blockDelta(index + 1, { type: 'text_delta', text: 'Apple Ginza reopens' }),
    blockDelta(index + 1, { type: 'text_delta', text: ' on September 26.' }),
    blockStop(index + 1),
    blockStart(index + 2, { type: 'text', text: '' }),
    blockDelta(index + 2, { type: 'text_delta', text: ' ' }),
    blockStop(index + 2),
    blockStart(index + 3, { citations: [], type: 'text', text: '' }),
    blockDelta(index + 3, { type: 'citations_delta', citation: foldableCitation }),
    blockDelta(index + 3, { type: 'text_delta', text: 'A foldable iPhone is planned for 2026.' }),
    blockStop(index + 3),
  ];
}

export function messageDeltaWith(delta: Record<string, unknown>, usage: Record<string, unknown>): string {
  return event({
    type: 'message_delta',
    delta: { stop_sequence: null, ...delta },
    usage,
  });
}

export const searchUsage = {
  input_tokens: 15_665,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  output_tokens: 795,
  server_tool_use: { web_search_requests: 1, web_fetch_requests: 0 },
};

/** A refusal as Anthropic streams it: no content, `stop_details` on the `message_delta`. */
export function refusalStream(stopDetails: Record<string, unknown>, before: string[] = []): string[] {
  return [
    messageStart({ input_tokens: 18, output_tokens: 1 }),
    ping,
    ...before,
    messageDeltaWith(
      { stop_reason: 'refusal', stop_details: stopDetails },
      { input_tokens: 18, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 5 },
    ),
    messageStop,
  ];
}

export const mcpToolUse = {
  type: 'mcp_tool_use',
  id: 'mcptoolu_017CuqaJcXe5ZHJjaz3KS1AT',
  name: 'echo',
  input: {},
  server_name: 'echo',
};

export const mcpToolResult = {
  type: 'mcp_tool_result',
  tool_use_id: 'mcptoolu_017CuqaJcXe5ZHJjaz3KS1AT',
  is_error: false,
  content: [{ type: 'text', text: 'Tool echo: hello world' }],
};

export const codeExecutionContainer = {
  id: 'container_011CTpFs9ts1DfKnPGfW5Kah',
  expires_at: '2999-01-01T00:00:00.000Z',
};

export const bashCall = {
  type: 'server_tool_use',
  id: 'srvtoolu_01PFUBCQgGTW4DQh2hbyiPWc',
  name: 'bash_code_execution',
  input: {},
};

export const bashResult = {
  type: 'bash_code_execution_tool_result',
  tool_use_id: 'srvtoolu_01PFUBCQgGTW4DQh2hbyiPWc',
  content: {
    type: 'bash_code_execution_result',
    stdout: '4\n',
    stderr: '',
    return_code: 0,
    content: [],
  },
};
