import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { useScriptedServer } from '@lunation/provider-testkit';
import {
  blockDelta,
  blockStart,
  blockStop,
  messageDelta,
  messageStart,
  messageStop,
  ping,
  streamHeaders,
} from '@lunation/provider-testkit/wires/anthropic-messages';
import {
  chunk,
  done,
  streamHeaders as openaiHeaders,
  usageChunk,
} from '@lunation/provider-testkit/wires/openai-chat';
import { createRuntime, type Tool } from '@lunation/runtime';
import { collectEvents, eventTypes, streamedText } from '@lunation/runtime/testing';
import { describe, expect, it } from 'vitest';
import { AiSdkModel } from './ai-sdk-model.js';

const server = useScriptedServer();

function weatherTool(calls: unknown[]): Tool<{ city: string }> {
  return {
    descriptor: {
      name: 'get_weather',
      description: 'The current weather in a city.',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
    inputSchema: undefined,
    execute: (input) => {
      calls.push(input);
      return { city: input.city, tempC: 21 };
    },
  };
}

describe('AiSdkModel in the agent loop', () => {
  it('runs a two-step tool run with @ai-sdk/anthropic and sends the signed thinking back', async () => {
    server.enqueue(
      {
        status: 200,
        headers: streamHeaders(),
        body: [
          messageStart({ input_tokens: 300, output_tokens: 1 }),
          blockStart(0, { type: 'thinking', thinking: '', signature: '' }),
          ping,
          blockDelta(0, { type: 'thinking_delta', thinking: 'The user wants the weather in Paris.' }),
          blockDelta(0, { type: 'signature_delta', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA' }),
          blockStop(0),
          blockStart(1, { type: 'tool_use', id: 'toolu_01W', name: 'get_weather', input: {} }),
          blockDelta(1, { type: 'input_json_delta', partial_json: '{"city": ' }),
          blockDelta(1, { type: 'input_json_delta', partial_json: '"Paris"}' }),
          blockStop(1),
          messageDelta('tool_use', { output_tokens: 60 }),
          messageStop,
        ],
      },
      {
        status: 200,
        headers: streamHeaders(),
        body: [
          messageStart({ input_tokens: 400, output_tokens: 1 }),
          blockStart(0, { type: 'text', text: '' }),
          blockDelta(0, { type: 'text_delta', text: 'It is 21°C in Paris.' }),
          blockStop(0),
          messageDelta('end_turn', { output_tokens: 12 }),
          messageStop,
        ],
      },
    );
    const calls: unknown[] = [];
    const anthropic = createAnthropic({ apiKey: 'sk-ant-test', baseURL: `${server.url}/v1` });
    const runtime = createRuntime()
      .model('main', new AiSdkModel({ model: anthropic('claude-sonnet-4-5') }))
      .agent({
        id: 'assistant',
        model: 'main',
        systemPrompt: 'You answer weather questions.',
        tools: [weatherTool(calls)],
      })
      .build();
    const handle = await runtime.run({ threadId: 'thread-ai-sdk-anthropic', input: 'Weather in Paris?' });
    const events = await collectEvents(handle.events);
    const result = await handle.result;
    expect(result).toMatchObject({ status: 'done', finalText: 'It is 21°C in Paris.', steps: 2 });
    expect(calls).toEqual([{ city: 'Paris' }]);
    expect(streamedText(events)).toBe('It is 21°C in Paris.');
    expect(eventTypes(events).filter((type) => type === 'tool-result')).toHaveLength(1);
    expect(result.usage).toMatchObject({ inputTokens: 700, outputTokens: 72 });

    expect(server.requests).toHaveLength(2);
    const second = server.requests[1]!.body as Record<string, unknown>;
    expect(second.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      {
        role: 'assistant',
        content: [
          {
            type: 'thinking',
            thinking: 'The user wants the weather in Paris.',
            signature: 'EqQBCgIYAhIM1gbcDa9GJwZA',
          },
          { type: 'tool_use', id: 'toolu_01W', name: 'get_weather', input: { city: 'Paris' } },
        ],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_01W', content: '{"city":"Paris","tempC":21}' }],
      },
    ]);
    expect(second.system).toEqual([{ type: 'text', text: 'You answer weather questions.' }]);
  });

  it('runs a two-step tool run with @ai-sdk/openai (Chat Completions)', async () => {
    const usage = {
      inputTokens: 50,
      outputTokens: 10,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    };
    server.enqueue(
      {
        status: 200,
        headers: openaiHeaders(),
        body: [
          chunk({ role: 'assistant', content: null }),
          chunk({
            tool_calls: [
              { index: 0, id: 'call_W1', type: 'function', function: { name: 'get_weather', arguments: '' } },
            ],
          }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
          chunk({}, 'tool_calls'),
          usageChunk(usage),
          done,
        ],
      },
      {
        status: 200,
        headers: openaiHeaders(),
        body: [
          chunk({ role: 'assistant', content: '' }),
          chunk({ content: 'It is 21°C ' }),
          chunk({ content: 'in Paris.' }),
          chunk({}, 'stop'),
          usageChunk(usage),
          done,
        ],
      },
    );
    const calls: unknown[] = [];
    const openai = createOpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1` });
    const runtime = createRuntime()
      .model('main', new AiSdkModel({ model: openai.chat('gpt-4.1-mini') }))
      .agent({
        id: 'assistant',
        model: 'main',
        systemPrompt: 'You answer weather questions.',
        tools: [weatherTool(calls)],
      })
      .build();
    const result = await (await runtime.run({ threadId: 'thread-ai-sdk-openai', input: 'Weather in Paris?' }))
      .result;
    expect(result).toMatchObject({ status: 'done', finalText: 'It is 21°C in Paris.', steps: 2 });
    expect(calls).toEqual([{ city: 'Paris' }]);
    expect(result.usage).toMatchObject({ inputTokens: 100, outputTokens: 20 });
    const second = server.requests[1]!.body as Record<string, unknown>;
    expect(second.messages).toEqual([
      { role: 'system', content: 'You answer weather questions.' },
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_W1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_W1', content: '{"city":"Paris","tempC":21}' },
    ]);
  });
});
