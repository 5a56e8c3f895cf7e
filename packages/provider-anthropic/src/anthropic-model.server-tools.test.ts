import type { ModelRequest } from '@lunation/contract';
import {
  assertStreamInvariants,
  collectStream,
  summarizeParts,
  useScriptedServer,
} from '@lunation/provider-testkit';
import {
  blockDelta,
  blockStart,
  blockStop,
  messageStart,
  messageStop,
  ping,
  streamHeaders,
} from '@lunation/provider-testkit/wires/anthropic-messages';
import { createRuntime, type Tool } from '@lunation/runtime';
import { describe, expect, it } from 'vitest';
import {
  bashCall,
  bashResult,
  citedAnswerBlocks,
  codeExecutionContainer,
  foldableCitation,
  ginzaCitation,
  mcpToolResult,
  mcpToolUse,
  messageDeltaWith,
  searchId,
  searchUsage,
  webSearchBlocks,
  webSearchResult,
} from './__fixtures__/anthropic-recorded.js';
import { AnthropicModel, type AnthropicModelOptions } from './anthropic-model.js';

const server = useScriptedServer();

const sse = (...events: string[]) => ({ status: 200, headers: streamHeaders(), body: events });
const webSearch = { type: 'web_search_20250305', name: 'web_search', max_uses: 3 } as const;

function model(options: Partial<AnthropicModelOptions> = {}): AnthropicModel {
  return new AnthropicModel({
    model: 'claude-sonnet-5-5',
    apiKey: 'sk-ant-test',
    baseURL: server.url,
    retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 4 },
    serverTools: [webSearch],
    ...options,
  });
}

const question: ModelRequest = {
  messages: [{ id: 'u1', role: 'user', content: [{ type: 'text', text: 'Tech news today?' }] }],
  tools: [],
};

/** The server_tool_use block as sent back: the streamed query parsed into `input`. */
const searchCall = {
  type: 'server_tool_use',
  id: searchId,
  name: 'web_search',
  input: { query: 'tech news today September 26 2025' },
};

/** The text blocks of `citedAnswerBlocks`, as Anthropic wants them back. */
const citedAnswer = [
  { type: 'text', text: 'Here is the news.\n\n' },
  { type: 'text', text: 'Apple Ginza reopens on September 26.', citations: [ginzaCitation] },
  { type: 'text', text: ' ' },
  { type: 'text', text: 'A foldable iPhone is planned for 2026.', citations: [foldableCitation] },
];

describe('AnthropicModel server tools', () => {
  it('declares server tools beside the agent tools and streams their blocks and citations', async () => {
    server.enqueue(
      sse(
        messageStart({ input_tokens: 2_037, output_tokens: 1 }),
        ...webSearchBlocks(0),
        ...citedAnswerBlocks(2),
        messageDeltaWith({ stop_reason: 'end_turn' }, searchUsage),
        messageStop,
      ),
    );
    const weather = { name: 'get_weather', description: 'Weather.', parameters: { type: 'object' } };
    const { parts, error } = await collectStream(model().stream({ ...question, tools: [weather] }));
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    expect((server.requests[0]!.body as Record<string, unknown>).tools).toEqual([
      { name: 'get_weather', description: 'Weather.', input_schema: { type: 'object' } },
      webSearch,
    ]);
    expect(parts.slice(0, 9)).toEqual([
      { type: 'provider-content', provider: 'anthropic', kind: 'server_tool_use', value: searchCall },
      {
        type: 'provider-content',
        provider: 'anthropic',
        kind: 'web_search_tool_result',
        value: webSearchResult,
      },
      { type: 'text-delta', delta: 'Here is the news.\n\n' },
      { type: 'text-delta', delta: '', providerMetadata: { anthropic: { citations: null } } },
      { type: 'text-delta', delta: 'Apple Ginza reopens' },
      { type: 'text-delta', delta: ' on September 26.' },
      { type: 'text-delta', delta: '', providerMetadata: { anthropic: { citations: [ginzaCitation] } } },
      { type: 'text-delta', delta: ' ' },
      { type: 'text-delta', delta: '', providerMetadata: { anthropic: { citations: null } } },
    ]);
    expect(summarizeParts(parts).usage?.inputTokens).toBe(15_665);
  });

  it('keeps the blocks and citations in the assistant message and sends them back exactly on the next request', async () => {
    server.enqueue(
      sse(
        messageStart({ input_tokens: 2_037, output_tokens: 1 }),
        ...webSearchBlocks(0),
        ...citedAnswerBlocks(2),
        blockStart(6, { type: 'tool_use', id: 'toolu_01W', name: 'save_note', input: {} }),
        blockDelta(6, { type: 'input_json_delta', partial_json: '{"note":"Ginza"}' }),
        blockStop(6),
        messageDeltaWith({ stop_reason: 'tool_use' }, searchUsage),
        messageStop,
      ),
      sse(
        messageStart(),
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'Saved.' }),
        blockStop(0),
        messageDeltaWith({ stop_reason: 'end_turn' }, { output_tokens: 3 }),
        messageStop,
      ),
    );
    const notes: unknown[] = [];
    const saveNote: Tool<{ note: string }> = {
      descriptor: { name: 'save_note', description: 'Saves a note.', parameters: { type: 'object' } },
      inputSchema: undefined,
      execute: (input) => {
        notes.push(input);
        return 'ok';
      },
    };
    const runtime = createRuntime()
      .model('main', model())
      .agent({ id: 'news', model: 'main', tools: [saveNote] })
      .build();
    const handle = await runtime.run({ threadId: 'thread-search', input: 'Tech news today?' });
    const result = await handle.result;
    expect(result).toMatchObject({ status: 'done', finalText: 'Saved.', steps: 2 });
    expect(notes).toEqual([{ note: 'Ginza' }]);
    const second = server.requests[1]!.body as { messages: unknown[]; tools: unknown[] };
    expect(second.tools).toEqual([
      { name: 'save_note', description: 'Saves a note.', input_schema: { type: 'object' } },
      webSearch,
    ]);
    expect(second.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Tech news today?' }] },
      {
        role: 'assistant',
        content: [
          searchCall,
          webSearchResult,
          ...citedAnswer,
          { type: 'tool_use', id: 'toolu_01W', name: 'save_note', input: { note: 'Ginza' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01W', content: 'ok' }] },
    ]);
  });

  it('continues a turn paused with pause_turn itself, so the runtime sees one answer', async () => {
    server.enqueue(
      sse(
        messageStart({ input_tokens: 2_037, output_tokens: 1 }),
        ...webSearchBlocks(0),
        messageDeltaWith({ stop_reason: 'pause_turn' }, { input_tokens: 2_037, output_tokens: 40 }),
        messageStop,
      ),
      sse(
        messageStart({ input_tokens: 9_000, output_tokens: 1 }),
        ping,
        ...citedAnswerBlocks(0),
        messageDeltaWith({ stop_reason: 'end_turn' }, { input_tokens: 9_000, output_tokens: 300 }),
        messageStop,
      ),
    );
    const runtime = createRuntime().model('main', model()).agent({ id: 'news', model: 'main' }).build();
    const handle = await runtime.run({ threadId: 'thread-pause', input: 'Tech news today?' });
    const result = await handle.result;
    expect(result).toMatchObject({
      status: 'done',
      steps: 1,
      finalText:
        'Here is the news.\n\nApple Ginza reopens on September 26. A foldable iPhone is planned for 2026.',
    });
    expect(result.usage).toMatchObject({ inputTokens: 11_037, outputTokens: 340 });
    expect(server.requests).toHaveLength(2);
    // The continuation is the same request with the paused answer appended as the last (assistant) message.
    const first = server.requests[0]!.body as Record<string, unknown>;
    const continued = server.requests[1]!.body as Record<string, unknown>;
    expect(continued.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Tech news today?' }] },
      { role: 'assistant', content: [searchCall, webSearchResult] },
    ]);
    expect({ ...continued, messages: undefined }).toEqual({ ...first, messages: undefined });

    const assistant = result.messages.find((message) => message.role === 'assistant');
    expect(assistant).toMatchObject({ providerMetadata: { anthropic: { pauseContinuations: 1 } } });
    expect(assistant?.content.map((part) => part.type)).toEqual([
      'provider-content',
      'provider-content',
      'text',
      'text',
      'text',
      'text',
    ]);
  });

  it('stops continuing after maxPauseContinuations and ends the answer with rawStopReason pause_turn', async () => {
    const paused = () =>
      sse(
        messageStart(),
        ...webSearchBlocks(0),
        messageDeltaWith({ stop_reason: 'pause_turn' }, { output_tokens: 10 }),
        messageStop,
      );
    server.enqueue(paused(), paused(), paused());
    const { parts, error } = await collectStream(model({ maxPauseContinuations: 2 }).stream(question));
    expect(error).toBeUndefined();
    expect(server.requests).toHaveLength(3);
    expect(parts.filter((part) => part.type === 'provider-content')).toHaveLength(6);
    expect(parts.at(-1)).toEqual({
      type: 'finish',
      stopReason: 'end-turn',
      rawStopReason: 'pause_turn',
      providerMetadata: { anthropic: { pauseContinuations: 2 } },
    });
    expect(summarizeParts(parts).usage?.outputTokens).toBe(30);
  });

  it('keeps code execution blocks and the container, and reuses the container on the next request', async () => {
    server.enqueue(
      sse(
        messageStart(),
        blockStart(0, bashCall),
        blockDelta(0, {
          type: 'input_json_delta',
          partial_json: '{"command": "python -c \\"print(2+2)\\""}',
        }),
        blockStop(0),
        blockStart(1, bashResult),
        blockStop(1),
        blockStart(2, { type: 'text', text: '' }),
        blockDelta(2, { type: 'text_delta', text: '2 + 2 = 4' }),
        blockStop(2),
        messageDeltaWith(
          { stop_reason: 'end_turn', container: codeExecutionContainer },
          { output_tokens: 50 },
        ),
        messageStop,
      ),
      sse(
        messageStart(),
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'Still 4.' }),
        blockStop(0),
        messageDeltaWith({ stop_reason: 'end_turn' }, { output_tokens: 3 }),
        messageStop,
      ),
    );
    const codeExecution = { type: 'code_execution_20250825', name: 'code_execution' } as const;
    const runtime = createRuntime()
      .model('main', model({ serverTools: [codeExecution] }))
      .agent({ id: 'calc', model: 'main' })
      .build();
    const first = await (await runtime.run({ threadId: 'thread-code', input: 'What is 2+2?' })).result;
    expect(first).toMatchObject({ status: 'done', finalText: '2 + 2 = 4' });
    const second = await (await runtime.run({ threadId: 'thread-code', input: 'And now?' })).result;
    expect(second).toMatchObject({ status: 'done', finalText: 'Still 4.' });

    const body = server.requests[1]!.body as Record<string, unknown>;
    expect(body.container).toBe(codeExecutionContainer.id);
    expect(body.tools).toEqual([codeExecution]);
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'What is 2+2?' }] },
      {
        role: 'assistant',
        content: [
          { ...bashCall, input: { command: 'python -c "print(2+2)"' } },
          bashResult,
          { type: 'text', text: '2 + 2 = 4' },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'And now?' }] },
    ]);
    expect(server.requests[0]!.body).not.toHaveProperty('container');
  });

  it('sends MCP servers with the connector beta and keeps mcp_tool_use / mcp_tool_result blocks', async () => {
    const mcpServer = { type: 'url', name: 'echo', url: 'https://mcp.example.com/sse' } as const;
    const reply = sse(
      messageStart({ input_tokens: 589, output_tokens: 1 }),
      blockStart(0, mcpToolUse),
      blockDelta(0, { type: 'input_json_delta', partial_json: '' }),
      blockDelta(0, { type: 'input_json_delta', partial_json: '{"message": ' }),
      blockDelta(0, { type: 'input_json_delta', partial_json: '"hello world"}' }),
      blockStop(0),
      blockStart(1, mcpToolResult),
      blockStop(1),
      blockStart(2, { type: 'text', text: '' }),
      blockDelta(2, { type: 'text_delta', text: 'The echo tool responded: hello world' }),
      blockStop(2),
      messageDeltaWith({ stop_reason: 'end_turn' }, { input_tokens: 1_250, output_tokens: 83 }),
      messageStop,
    );
    server.enqueue(
      reply,
      sse(messageStart(), messageDeltaWith({ stop_reason: 'end_turn' }, { output_tokens: 1 }), messageStop),
    );
    const mcpModel = model({
      serverTools: [],
      mcpServers: [mcpServer],
      headers: { 'anthropic-beta': 'context-1m-2025-08-07' },
    });
    const { parts, error } = await collectStream(mcpModel.stream(question));
    expect(error).toBeUndefined();
    const sent = server.requests[0]!;
    expect(sent.headers['anthropic-beta']).toBe('context-1m-2025-08-07,mcp-client-2025-04-04');
    expect((sent.body as Record<string, unknown>).mcp_servers).toEqual([mcpServer]);
    const blocks = parts.filter((part) => part.type === 'provider-content');
    expect(blocks).toEqual([
      {
        type: 'provider-content',
        provider: 'anthropic',
        kind: 'mcp_tool_use',
        value: { ...mcpToolUse, input: { message: 'hello world' } },
      },
      { type: 'provider-content', provider: 'anthropic', kind: 'mcp_tool_result', value: mcpToolResult },
    ]);

    await collectStream(
      mcpModel.stream({
        messages: [
          ...question.messages,
          {
            id: 'a1',
            role: 'assistant',
            content: [
              ...blocks,
              {
                type: 'provider-content',
                provider: 'openai',
                kind: 'web_search_call',
                value: { id: 'ws_1' },
              },
              { type: 'text', text: 'The echo tool responded: hello world' },
            ],
          },
          { id: 'u2', role: 'user', content: [{ type: 'text', text: 'Thanks' }] },
        ],
        tools: [],
      }),
    );
    expect((server.requests[1]!.body as { messages: unknown[] }).messages[1]).toEqual({
      role: 'assistant',
      content: [
        { ...mcpToolUse, input: { message: 'hello world' } },
        mcpToolResult,
        { type: 'text', text: 'The echo tool responded: hello world' },
      ],
    });
  });
});
