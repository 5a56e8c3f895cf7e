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
import { createRuntime, type Tool } from '@lunation/runtime';
import { collectEvents, eventsOfType, eventTypes, streamedText } from '@lunation/runtime/testing';
import { describe, expect, it } from 'vitest';
import { AnthropicModel } from './anthropic-model.js';

const server = useScriptedServer();

const sse = (...events: string[]) => ({ status: 200, headers: streamHeaders(), body: events });

describe('AnthropicModel in the agent loop', () => {
  it('runs a two-step conversation: thinking and a tool call, then the answer, passing the signed thinking back', async () => {
    server.enqueue(
      sse(
        messageStart({
          input_tokens: 300,
          cache_read_input_tokens: 0,
          cache_creation_input_tokens: 1_200,
          output_tokens: 1,
        }),
        blockStart(0, { type: 'thinking', thinking: '', signature: '' }),
        ping,
        blockDelta(0, { type: 'thinking_delta', thinking: 'The user wants the weather in Paris.' }),
        blockDelta(0, { type: 'signature_delta', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA' }),
        blockStop(0),
        blockStart(1, { type: 'tool_use', id: 'toolu_01W', name: 'get_weather', input: {} }),
        blockDelta(1, { type: 'input_json_delta', partial_json: '{"city": ' }),
        blockDelta(1, { type: 'input_json_delta', partial_json: '"Paris"}' }),
        blockStop(1),
        messageDelta('tool_use', { output_tokens: 60, output_tokens_details: { thinking_tokens: 25 } }),
        messageStop,
      ),
      sse(
        messageStart({
          input_tokens: 40,
          cache_read_input_tokens: 1_200,
          cache_creation_input_tokens: 0,
          output_tokens: 1,
        }),
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: 'It is ' }),
        blockDelta(0, { type: 'text_delta', text: '21°C in Paris.' }),
        blockStop(0),
        messageDelta('end_turn', { output_tokens: 12 }),
        messageStop,
      ),
    );
    const calls: unknown[] = [];
    const weather: Tool<{ city: string }> = {
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
    const model = new AnthropicModel({
      model: 'claude-sonnet-5-5',
      apiKey: 'sk-ant-test',
      baseURL: server.url,
    });
    const runtime = createRuntime()
      .model('main', model)
      .agent({
        id: 'assistant',
        model: 'main',
        systemPrompt: 'You answer weather questions.',
        tools: [weather],
        overrides: { reasoningEffort: 'medium' },
      })
      .build();

    const handle = await runtime.run({ threadId: 'thread-anthropic', input: 'Weather in Paris?' });
    const events = await collectEvents(handle.events);
    const result = await handle.result;

    expect(eventTypes(events)).toEqual([
      'run-start',
      'step-start',
      'reasoning-delta',
      'tool-call-start',
      'tool-call-delta',
      'tool-call-end',
      'tool-execution-start',
      'tool-result',
      'step-end',
      'step-start',
      'text-delta',
      'step-end',
      'run-end',
    ]);
    expect(eventsOfType(events, 'tool-call-end')[0]).toMatchObject({
      toolCallId: 'toolu_01W',
      toolName: 'get_weather',
      arguments: '{"city": "Paris"}',
    });
    expect(streamedText(events)).toBe('It is 21°C in Paris.');
    expect(calls).toEqual([{ city: 'Paris' }]);
    expect(result).toMatchObject({
      status: 'done',
      termination: { type: 'natural-end' },
      finalText: 'It is 21°C in Paris.',
      steps: 2,
    });
    expect(result.usage).toEqual({
      inputTokens: 1_500 + 1_240,
      outputTokens: 72,
      cacheReadTokens: 1_200,
      cacheWriteTokens: 1_200,
      reasoningTokens: 25,
    });

    expect(server.requests).toHaveLength(2);
    const second = server.requests[1]!.body as Record<string, unknown>;
    expect(second).toMatchObject({
      model: 'claude-sonnet-5-5',
      system: [{ type: 'text', text: 'You answer weather questions.' }],
      thinking: { type: 'adaptive' },
      output_config: { effort: 'medium' },
    });
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
  });
});
