import type { Usage } from '@lunation/contract';
import { useScriptedServer } from '@lunation/provider-testkit';
import { createRuntime, type Tool } from '@lunation/runtime';
import { collectEvents, eventsOfType, eventTypes, streamedText } from '@lunation/runtime/testing';
import { describe, expect, it } from 'vitest';
import { ResponsesStreamWriter, responsesSse } from './__fixtures__/openai-responses-wire.js';
import { OpenAIResponsesModel } from './openai-responses-model.js';

const server = useScriptedServer();

const firstUsage: Usage = {
  inputTokens: 120,
  outputTokens: 90,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 64,
};
const secondUsage: Usage = {
  inputTokens: 260,
  outputTokens: 14,
  cacheReadTokens: 128,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};

describe('OpenAIResponsesModel in the agent loop', () => {
  it('runs a tool call, then the answer, sending the encrypted reasoning back with store: false', async () => {
    server.enqueue(
      responsesSse(
        new ResponsesStreamWriter()
          .created()
          .reasoning('rs_T1', [['Need the weather tool.']], 'gAAAAB-rs_T1-encrypted')
          .call('fc_T1', 'call_W1', 'get_weather', ['{"city":', '"Paris"}'])
          .completed(firstUsage),
      ),
      responsesSse(
        new ResponsesStreamWriter()
          .created()
          .message('msg_T2', ['It is ', '21°C in Paris.'])
          .completed(secondUsage),
      ),
      responsesSse(
        new ResponsesStreamWriter().created().message('msg_T3', ['You are welcome.']).completed(secondUsage),
      ),
    );
    const calls: unknown[] = [];
    const weather: Tool<{ city: string }> = {
      descriptor: {
        name: 'get_weather',
        description: 'The current weather in a city.',
        parameters: {
          type: 'object',
          properties: { city: { type: 'string' } },
          required: ['city'],
          additionalProperties: false,
        },
      },
      inputSchema: undefined,
      execute: (input) => {
        calls.push(input);
        return { city: input.city, tempC: 21 };
      },
    };
    const model = new OpenAIResponsesModel({
      model: 'gpt-5-mini',
      apiKey: 'sk-test',
      baseURL: `${server.url}/v1`,
    });
    const runtime = createRuntime()
      .model('main', model)
      .agent({
        id: 'assistant',
        model: 'main',
        systemPrompt: 'You answer weather questions.',
        tools: [weather],
      })
      .build();

    const handle = await runtime.run({ threadId: 'thread-responses', input: 'Weather in Paris?' });
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
      toolCallId: 'call_W1',
      arguments: '{"city":"Paris"}',
    });
    expect(streamedText(events)).toBe('It is 21°C in Paris.');
    expect(calls).toEqual([{ city: 'Paris' }]);
    expect(result).toMatchObject({ status: 'done', finalText: 'It is 21°C in Paris.', steps: 2 });
    expect(result.usage).toEqual({
      inputTokens: 380,
      outputTokens: 104,
      cacheReadTokens: 128,
      cacheWriteTokens: 0,
      reasoningTokens: 64,
    });

    const reasoningItem = {
      type: 'reasoning',
      id: 'rs_T1',
      summary: [{ type: 'summary_text', text: 'Need the weather tool.' }],
      encrypted_content: 'gAAAAB-rs_T1-encrypted',
    };
    const toolTurn = [
      reasoningItem,
      {
        type: 'function_call',
        call_id: 'call_W1',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
        id: 'fc_T1',
      },
      { type: 'function_call_output', call_id: 'call_W1', output: '{"city":"Paris","tempC":21}' },
    ];
    const second = server.requests[1]!.body as Record<string, unknown>;
    expect(second).toMatchObject({ store: false, include: ['reasoning.encrypted_content'] });
    expect(second.input).toEqual([
      { role: 'system', content: 'You answer weather questions.' },
      { role: 'user', content: 'Weather in Paris?' },
      ...toolTurn,
    ]);

    // A later run on the thread rebuilds the whole history from what the runtime kept.
    const next = await runtime.run({ threadId: 'thread-responses', input: 'Thanks!' });
    await collectEvents(next.events);
    expect((await next.result).finalText).toBe('You are welcome.');
    const third = server.requests[2]!.body as { input: unknown[] };
    expect(third.input).toEqual([
      { role: 'system', content: 'You answer weather questions.' },
      { role: 'user', content: 'Weather in Paris?' },
      ...toolTurn,
      {
        type: 'message',
        role: 'assistant',
        id: 'msg_T2',
        status: 'completed',
        content: [{ type: 'output_text', text: 'It is 21°C in Paris.', annotations: [] }],
      },
      { role: 'user', content: 'Thanks!' },
    ]);
  });
});
