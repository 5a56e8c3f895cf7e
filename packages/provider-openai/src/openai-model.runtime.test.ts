import { useScriptedServer } from '@lunation/provider-testkit';
import { chunk, done, streamHeaders, usageChunk } from '@lunation/provider-testkit/wires/openai-chat';
import { createRuntime, type Tool } from '@lunation/runtime';
import { collectEvents, eventsOfType, eventTypes, streamedText } from '@lunation/runtime/testing';
import { describe, expect, it } from 'vitest';
import { OpenAIModel } from './openai-model.js';

const server = useScriptedServer();

const sse = (...events: string[]) => ({ status: 200, headers: streamHeaders(), body: events });
const role = chunk({ role: 'assistant', content: '', refusal: null });

describe('OpenAIModel in the agent loop', () => {
  it('runs a two-step conversation: a tool call, then the answer', async () => {
    const firstUsage = {
      inputTokens: 120,
      outputTokens: 18,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    };
    const secondUsage = {
      inputTokens: 160,
      outputTokens: 9,
      cacheReadTokens: 128,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    };
    server.enqueue(
      sse(
        role,
        chunk({
          tool_calls: [
            { index: 0, id: 'call_W1', type: 'function', function: { name: 'get_weather', arguments: '' } },
          ],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
        chunk({}, 'tool_calls'),
        usageChunk(firstUsage),
        done,
      ),
      sse(
        role,
        chunk({ content: 'It is ' }),
        chunk({ content: '21°C in Paris.' }),
        chunk({}, 'stop'),
        usageChunk(secondUsage),
        done,
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
    const model = new OpenAIModel({ model: 'gpt-4.1-mini', apiKey: 'sk-test', baseURL: `${server.url}/v1` });
    const runtime = createRuntime()
      .model('main', model)
      .agent({
        id: 'assistant',
        model: 'main',
        systemPrompt: 'You answer weather questions.',
        tools: [weather],
      })
      .build();

    const handle = await runtime.run({ threadId: 'thread-openai', input: 'Weather in Paris?' });
    const events = await collectEvents(handle.events);
    const result = await handle.result;

    expect(eventTypes(events)).toEqual([
      'run-start',
      'step-start',
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
      toolCallId: 'call_W1',
      toolName: 'get_weather',
      arguments: '{"city":"Paris"}',
    });
    expect(eventsOfType(events, 'tool-result')[0]).toMatchObject({
      toolCallId: 'call_W1',
      result: { status: 'success', data: { city: 'Paris', tempC: 21 } },
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
      inputTokens: 280,
      outputTokens: 27,
      cacheReadTokens: 128,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    });

    expect(server.requests).toHaveLength(2);
    const second = server.requests[1]!.body as { messages: unknown[]; tools: unknown[] };
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
    expect(second.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: weather.descriptor.description,
          parameters: weather.descriptor.parameters,
        },
      },
    ]);
  });
});
