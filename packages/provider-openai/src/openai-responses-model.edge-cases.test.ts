import { LunationError, type ModelRequest, type ModelStreamPart, type Usage } from '@lunation/contract';
import { assertStreamInvariants, collectStream, useScriptedServer } from '@lunation/provider-testkit';
import { insufficientQuota } from '@lunation/provider-testkit/wires/openai-chat';
import { createRuntime } from '@lunation/runtime';
import { describe, expect, it } from 'vitest';
import { ResponsesStreamWriter, responsesSse } from './__fixtures__/openai-responses-wire.js';
import { mcpApprovalTool, OpenAIResponsesModel, type OpenAIResponsesModelOptions } from './index.js';

// Vendor edge cases replayed from recorded Responses API streams (issue #25).

const server = useScriptedServer();

function model(options: Partial<OpenAIResponsesModelOptions> = {}): OpenAIResponsesModel {
  return new OpenAIResponsesModel({
    model: 'gpt-5-mini',
    apiKey: 'sk-test',
    baseURL: `${server.url}/v1`,
    retry: { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 4 },
    ...options,
  });
}

const usage: Usage = {
  inputTokens: 310,
  outputTokens: 42,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 16,
};
const zero: Usage = {
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};

function userRequest(text = 'Hi', extra: Partial<ModelRequest> = {}): ModelRequest {
  return { messages: [{ id: 'u1', role: 'user', content: [{ type: 'text', text }] }], tools: [], ...extra };
}

const ok = () =>
  responsesSse(new ResponsesStreamWriter().created().message('msg_ok', ['ok']).completed(usage));

function inputOf(index = 0): Array<Record<string, unknown>> {
  return (server.requests[index]!.body as { input: Array<Record<string, unknown>> }).input;
}

describe('OpenAIResponsesModel: insufficient_quota', () => {
  function expectQuotaError(error: unknown): void {
    expect(LunationError.hasCode(error, 'quota-exceeded')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(false);
    expect((error as Error).message).toContain('You exceeded your current quota');
    expect((error as Error).message).toContain('billing');
  }

  it('an HTTP 429 with code insufficient_quota is not retried', async () => {
    server.enqueue(
      {
        status: 429,
        headers: { 'content-type': 'application/json', 'x-request-id': 'req_q2' },
        body: JSON.stringify({ error: insufficientQuota }),
      },
      ok(),
    );
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expectQuotaError(error);
    expect((error as LunationError).status).toBe(429);
    expect(parts).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it('an error event with insufficient_quota as OpenAI sends it (nested `error`), before any output, is not retried', async () => {
    const writer = new ResponsesStreamWriter().created();
    writer.event('error', { error: insufficientQuota });
    server.enqueue(responsesSse(writer), ok());
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expectQuotaError(error);
    expect(parts).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it('an error event in the documented flat shape is not retried either', async () => {
    const writer = new ResponsesStreamWriter().created();
    writer.event('error', { code: 'insufficient_quota', message: insufficientQuota.message, param: null });
    server.enqueue(responsesSse(writer), ok());
    const { error } = await collectStream(model().stream(userRequest()));
    expectQuotaError(error);
    expect(server.requests).toHaveLength(1);
  });
});

describe('OpenAIResponsesModel: MCP approval requests', () => {
  const listTools = {
    id: 'mcpl_682d4379df088191886b70f4ec39f90403937d5f622d7a90',
    type: 'mcp_list_tools',
    server_label: 'deepwiki',
    tools: [
      {
        name: 'ask_question',
        description: 'Ask any question about a GitHub repository',
        input_schema: {
          type: 'object',
          properties: { repoName: { type: 'string' }, question: { type: 'string' } },
          required: ['repoName', 'question'],
          additionalProperties: false,
        },
        annotations: null,
      },
    ],
    error: null,
  };
  const approvalRequest = {
    id: 'mcpr_682d498e3bd4819196a0ce1664f8e77b04ad1e533afccbfa',
    type: 'mcp_approval_request',
    server_label: 'deepwiki',
    name: 'ask_question',
    arguments:
      '{"repoName":"modelcontextprotocol/modelcontextprotocol","question":"What transport protocols does the spec support?"}',
  };
  const mcpTool = {
    type: 'mcp' as const,
    server_label: 'deepwiki',
    server_url: 'https://mcp.deepwiki.com/mcp',
    require_approval: 'always' as const,
  };
  const approvalStream = () =>
    responsesSse(
      new ResponsesStreamWriter()
        .created()
        .hostedItem(listTools, ['response.mcp_list_tools.in_progress', 'response.mcp_list_tools.completed'])
        .hostedItem(approvalRequest)
        .completed(usage),
    );
  const callArguments = {
    serverLabel: 'deepwiki',
    toolName: 'ask_question',
    arguments: {
      repoName: 'modelcontextprotocol/modelcontextprotocol',
      question: 'What transport protocols does the spec support?',
    },
  };

  it('streams the request as a call of the approval tool, so the turn ends in tool use, not end-turn', async () => {
    server.enqueue(approvalStream());
    const { parts, error } = await collectStream(model({ hostedTools: [mcpTool] }).stream(userRequest()));
    expect(error).toBeUndefined();
    assertStreamInvariants(parts);
    expect(parts).toEqual([
      { type: 'provider-content', provider: 'openai', kind: 'mcp_list_tools', value: listTools },
      { type: 'tool-call-start', toolCallId: approvalRequest.id, toolName: 'openai_mcp_approval' },
      {
        type: 'tool-call-delta',
        toolCallId: approvalRequest.id,
        argumentsDelta: JSON.stringify(callArguments),
      },
      {
        type: 'tool-call-end',
        toolCallId: approvalRequest.id,
        toolName: 'openai_mcp_approval',
        arguments: JSON.stringify(callArguments),
        providerMetadata: { openai: { itemId: approvalRequest.id, mcpApprovalRequest: approvalRequest } },
      },
      { type: 'usage', usage },
      expect.objectContaining({ type: 'finish', stopReason: 'tool-use', rawStopReason: 'completed' }),
    ]);
  });

  function historyWith(result: {
    status: 'success' | 'error';
    data?: unknown;
    message?: string;
  }): ModelRequest {
    return {
      messages: [
        { id: 'u1', role: 'user', content: [{ type: 'text', text: 'Ask deepwiki about MCP transports.' }] },
        {
          id: 'a1',
          role: 'assistant',
          content: [
            { type: 'provider-content', provider: 'openai', kind: 'mcp_list_tools', value: listTools },
            {
              type: 'tool-call',
              toolCallId: approvalRequest.id,
              toolName: 'openai_mcp_approval',
              arguments: JSON.stringify(callArguments),
              providerMetadata: {
                openai: { itemId: approvalRequest.id, mcpApprovalRequest: approvalRequest },
              },
            },
          ],
        },
        {
          id: 't1',
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: approvalRequest.id,
              toolName: 'openai_mcp_approval',
              result: result as never,
            },
          ],
        },
      ],
      tools: [mcpApprovalTool],
    };
  }

  it('sends the approval back as mcp_approval_response after the request item, and never offers the approval tool to the model', async () => {
    server.enqueue(ok());
    const { error } = await collectStream(
      model({ hostedTools: [mcpTool] }).stream(historyWith({ status: 'success', data: { approve: true } })),
    );
    expect(error).toBeUndefined();
    expect(inputOf().slice(1)).toEqual([
      listTools,
      approvalRequest,
      { type: 'mcp_approval_response', approval_request_id: approvalRequest.id, approve: true },
    ]);
    const body = server.requests[0]!.body as { tools: Array<Record<string, unknown>> };
    expect(body.tools).toEqual([mcpTool]);
  });

  it('a declined call (or a payload with approve: false) goes back as approve: false with the reason', async () => {
    server.enqueue(ok(), ok());
    await collectStream(
      model().stream(historyWith({ status: 'error', message: 'The user declined this call: not that repo' })),
    );
    await collectStream(
      model().stream(historyWith({ status: 'success', data: { approve: false, reason: 'too broad' } })),
    );
    expect(inputOf(0).at(-1)).toEqual({
      type: 'mcp_approval_response',
      approval_request_id: approvalRequest.id,
      approve: false,
      reason: 'The user declined this call: not that repo',
    });
    expect(inputOf(1).at(-1)).toEqual({
      type: 'mcp_approval_response',
      approval_request_id: approvalRequest.id,
      approve: false,
      reason: 'too broad',
    });
  });

  it('in the agent loop: the request suspends the run with a ticket; the decision is sent back as the approval', async () => {
    server.enqueue(
      approvalStream(),
      responsesSse(
        new ResponsesStreamWriter()
          .created()
          .hostedItem({
            id: 'mcp_682d437d90a88191bf88cd03aae0c3e503937d5f622d7a90',
            type: 'mcp_call',
            server_label: 'deepwiki',
            name: 'ask_question',
            arguments: approvalRequest.arguments,
            output: 'The spec defines stdio and Streamable HTTP.',
            error: null,
            approval_request_id: approvalRequest.id,
          })
          .message('msg_done', ['stdio and Streamable HTTP.'])
          .completed(usage),
      ),
    );
    const runtime = createRuntime()
      .model('main', model({ hostedTools: [mcpTool] }))
      .agent({ id: 'assistant', model: 'main' })
      .build();
    const waiting = await runtime.generate({
      threadId: 'mcp-thread',
      input: 'Ask deepwiki about MCP transports.',
      frontendTools: [mcpApprovalTool],
    });
    expect(waiting.status).toBe('waiting');
    expect(waiting.openTickets).toHaveLength(1);
    const ticket = waiting.openTickets[0]!;
    expect(ticket).toMatchObject({
      toolCallId: approvalRequest.id,
      toolName: 'openai_mcp_approval',
      parameters: callArguments,
    });
    const outcome = await runtime.sendDecisions('mcp-thread', [
      { decisionId: 'd1', ticketId: ticket.id, action: 'resume', payload: { approve: true } },
    ]);
    const done = await outcome.run?.result;
    expect(done).toMatchObject({ status: 'done', finalText: 'stdio and Streamable HTTP.' });
    expect(server.requests).toHaveLength(2);
    expect(inputOf(1).slice(-3)).toEqual([
      listTools,
      approvalRequest,
      { type: 'mcp_approval_response', approval_request_id: approvalRequest.id, approve: true },
    ]);
    expect((server.requests[0]!.body as { tools: unknown[] }).tools).toEqual([mcpTool]);
  });
});

describe('OpenAIResponsesModel: a function call cut off by max_output_tokens', () => {
  it('is dropped with a typed, non-retryable error instead of reaching the loop with invalid JSON', async () => {
    const writer = new ResponsesStreamWriter().created();
    writer.message('msg_C', ['Let me look that up.']);
    const index = writer.openCall('fc_C', 'call_C', 'get_weather');
    writer.argumentsDelta('fc_C', index, '{"city":"Pa');
    writer.incomplete('max_output_tokens', usage);
    server.enqueue(responsesSse(writer), ok());
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expect(LunationError.hasCode(error, 'tool-invalid-arguments')).toBe(true);
    expect((error as LunationError).isRetryable).toBe(false);
    expect((error as Error).message).toContain('max_output_tokens');
    expect((error as Error).message).toContain('"get_weather"');
    expect((error as Error).message).toContain('overrides.maxTokens');
    expect((error as LunationError).details).toMatchObject({
      toolCallId: 'call_C',
      toolName: 'get_weather',
      arguments: '{"city":"Pa',
      incompleteReason: 'max_output_tokens',
    });
    expect(parts.filter((part) => part.type === 'tool-call-end')).toEqual([]);
    expect(parts.map((part) => part.type)).toEqual([
      'text-delta',
      'text-delta',
      'tool-call-start',
      'tool-call-delta',
    ]);
    expect(server.requests).toHaveLength(1);
  });

  it('a call that finished before the response ran out still ends normally', async () => {
    const writer = new ResponsesStreamWriter().created();
    writer.call('fc_D', 'call_D', 'get_weather', ['{"city":', '"Paris"}']);
    writer.incomplete('max_output_tokens', usage);
    server.enqueue(responsesSse(writer));
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expect(error).toBeUndefined();
    expect(parts.find((part) => part.type === 'tool-call-end')).toMatchObject({
      toolCallId: 'call_D',
      arguments: '{"city":"Paris"}',
    });
    expect(parts.at(-1)).toMatchObject({ type: 'finish', stopReason: 'max-tokens' });
  });
});

describe('OpenAIResponsesModel: reasoning summaries, citations and usage', () => {
  it('streams each summary part as its own reasoning block and sends them back as separate summary parts of one item', async () => {
    server.enqueue(
      responsesSse(
        new ResponsesStreamWriter()
          .created()
          .reasoning('rs_M', [['**Reading** ', 'the question'], ['**Answering** briefly']], 'gAAAAB-rs_M')
          .message('msg_M', ['Hi.'])
          .completed(usage),
      ),
    );
    const { parts, error } = await collectStream(model().stream(userRequest()));
    expect(error).toBeUndefined();
    expect(parts.filter((part) => part.type === 'reasoning-delta')).toEqual([
      { type: 'reasoning-delta', delta: '**Reading** ' },
      { type: 'reasoning-delta', delta: 'the question' },
      { type: 'reasoning-delta', delta: '', providerMetadata: { openai: { itemId: 'rs_M' } } },
      { type: 'reasoning-delta', delta: '**Answering** briefly' },
      {
        type: 'reasoning-delta',
        delta: '',
        providerMetadata: { openai: { itemId: 'rs_M', encryptedContent: 'gAAAAB-rs_M' } },
      },
    ]);

    server.enqueue(ok());
    const history: ModelRequest = {
      messages: [
        ...userRequest().messages,
        {
          id: 'a1',
          role: 'assistant',
          content: [
            {
              type: 'reasoning',
              text: '**Reading** the question',
              providerMetadata: { openai: { itemId: 'rs_M' } },
            },
            {
              type: 'reasoning',
              text: '**Answering** briefly',
              providerMetadata: { openai: { itemId: 'rs_M', encryptedContent: 'gAAAAB-rs_M' } },
            },
            { type: 'text', text: 'Hi.', providerMetadata: { openai: { itemId: 'msg_M' } } },
          ],
        },
        { id: 'u2', role: 'user', content: [{ type: 'text', text: 'And?' }] },
      ],
      tools: [],
    };
    await collectStream(model().stream(history));
    expect(inputOf(1)[1]).toEqual({
      type: 'reasoning',
      id: 'rs_M',
      summary: [
        { type: 'summary_text', text: '**Reading** the question' },
        { type: 'summary_text', text: '**Answering** briefly' },
      ],
      encrypted_content: 'gAAAAB-rs_M',
    });
    expect(inputOf(1).filter((item) => item.type === 'reasoning')).toHaveLength(1);
  });

  it('a reasoning item that came only whole keeps its summary parts apart too', async () => {
    const writer = new ResponsesStreamWriter().created();
    const index = writer.nextOutputIndex();
    const item = {
      id: 'rs_W',
      type: 'reasoning',
      encrypted_content: 'gAAAAB-rs_W',
      summary: [
        { type: 'summary_text', text: 'One.' },
        { type: 'summary_text', text: 'Two.' },
      ],
    };
    writer.event('response.output_item.added', { output_index: index, item: { ...item, summary: [] } });
    writer.event('response.output_item.done', { output_index: index, item });
    writer.output.push(item);
    server.enqueue(responsesSse(writer.message('msg_W', ['ok']).completed(usage)));
    const { parts } = await collectStream(model().stream(userRequest()));
    expect(parts.filter((part) => part.type === 'reasoning-delta')).toEqual([
      { type: 'reasoning-delta', delta: 'One.', providerMetadata: { openai: { itemId: 'rs_W' } } },
      {
        type: 'reasoning-delta',
        delta: 'Two.',
        providerMetadata: { openai: { itemId: 'rs_W', encryptedContent: 'gAAAAB-rs_W' } },
      },
    ]);
  });

  const citation = {
    type: 'url_citation',
    start_index: 12,
    end_index: 47,
    url: 'https://www.example.com/weather/paris?utm_source=openai',
    title: 'Paris weather',
  };

  it('keeps citations on output text and sends them back with the text', async () => {
    server.enqueue(
      responsesSse(
        new ResponsesStreamWriter()
          .created()
          .message('msg_A', ['It is 21°C. ', '([example.com](https://www.example.com))'], [citation])
          .completed(usage),
      ),
    );
    const { parts } = await collectStream(model().stream(userRequest()));
    const closing = parts.find((part) => part.type === 'text-delta' && part.providerMetadata !== undefined);
    expect(closing).toEqual({
      type: 'text-delta',
      delta: '',
      providerMetadata: { openai: { itemId: 'msg_A', annotations: [citation] } },
    });

    server.enqueue(ok());
    await collectStream(
      model().stream({
        messages: [
          ...userRequest().messages,
          {
            id: 'a1',
            role: 'assistant',
            content: [
              {
                type: 'text',
                text: 'It is 21°C. ([example.com](https://www.example.com))',
                providerMetadata: { openai: { itemId: 'msg_A', annotations: [citation] } },
              },
            ],
          },
          { id: 'u2', role: 'user', content: [{ type: 'text', text: 'Thanks' }] },
        ],
        tools: [],
      }),
    );
    expect(inputOf(1)[1]).toEqual({
      type: 'message',
      role: 'assistant',
      id: 'msg_A',
      status: 'completed',
      content: [
        {
          type: 'output_text',
          text: 'It is 21°C. ([example.com](https://www.example.com))',
          annotations: [citation],
        },
      ],
    });
  });

  it('keeps the citations of a message that came only whole', async () => {
    const writer = new ResponsesStreamWriter().created();
    const index = writer.nextOutputIndex();
    const part = {
      type: 'output_text',
      annotations: [citation],
      logprobs: [],
      text: 'Sunny, per example.com.',
    };
    const item = { id: 'msg_W', type: 'message', status: 'completed', role: 'assistant', content: [part] };
    writer.event('response.output_item.added', { output_index: index, item: { ...item, content: [] } });
    writer.event('response.output_item.done', { output_index: index, item });
    writer.output.push(item);
    server.enqueue(responsesSse(writer.completed(usage)));
    const { parts } = await collectStream(model().stream(userRequest()));
    expect(parts.filter((part) => part.type === 'text-delta')).toEqual([
      {
        type: 'text-delta',
        delta: 'Sunny, per example.com.',
        providerMetadata: { openai: { itemId: 'msg_W', annotations: [citation] } },
      },
    ]);
  });

  it("reports an incomplete response's all-zero usage as unknown, and real usage as known", async () => {
    server.enqueue(
      responsesSse(
        new ResponsesStreamWriter().created().message('msg_Z', ['Par']).incomplete('max_output_tokens', zero),
      ),
      responsesSse(
        new ResponsesStreamWriter()
          .created()
          .message('msg_Y', ['Par'])
          .incomplete('max_output_tokens', usage),
      ),
    );
    const unknown = await collectStream(model().stream(userRequest()));
    const usageParts = (parts: ModelStreamPart[]) => parts.filter((part) => part.type === 'usage');
    expect(usageParts(unknown.parts)).toEqual([{ type: 'usage', usage: zero, unknown: true }]);
    expect(unknown.parts.at(-1)).toMatchObject({ type: 'finish', stopReason: 'max-tokens' });
    const known = await collectStream(model().stream(userRequest()));
    expect(usageParts(known.parts)).toEqual([{ type: 'usage', usage }]);
  });

  it('reports a response without usage as unknown', async () => {
    const writer = new ResponsesStreamWriter().created().message('msg_N', ['ok']);
    writer.event('response.completed', {
      response: { id: 'resp_N', object: 'response', status: 'completed', output: writer.output, usage: null },
    });
    server.enqueue(responsesSse(writer));
    const { parts } = await collectStream(model().stream(userRequest()));
    expect(parts.filter((part) => part.type === 'usage')).toEqual([
      { type: 'usage', usage: zero, unknown: true },
    ]);
  });
});
