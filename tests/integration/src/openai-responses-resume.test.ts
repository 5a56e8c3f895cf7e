import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Usage } from '@lunation/contract';
import { OpenAIResponsesModel } from '@lunation/provider-openai';
import { ScriptedServer } from '@lunation/provider-testkit';
import { createRuntime, type Tool } from '@lunation/runtime';
import { collectEvents } from '@lunation/runtime/testing';
import { SqliteStore } from '@lunation/store-sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ResponsesStreamWriter,
  responsesSse,
} from '../../../packages/provider-openai/src/__fixtures__/openai-responses-wire.js';

const directory = mkdtempSync(join(tmpdir(), 'lunation-responses-resume-'));
const server = new ScriptedServer();

beforeAll(async () => {
  await server.start();
});
afterAll(async () => {
  await server.stop();
  rmSync(directory, { recursive: true, force: true });
});

const usage: Usage = {
  inputTokens: 50,
  outputTokens: 20,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 8,
};

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
  execute: (input) => ({ city: input.city, tempC: 21 }),
};

function runtimeOn(store: SqliteStore) {
  const model = new OpenAIResponsesModel({
    model: 'gpt-5-mini',
    apiKey: 'sk-test',
    baseURL: `${server.url}/v1`,
  });
  return createRuntime()
    .store(store)
    .model('main', model)
    .agent({ id: 'assistant', model: 'main', tools: [weather] })
    .build();
}

describe('OpenAIResponsesModel with store: false, resumed from a SQLite file', () => {
  it('a fresh runtime on a fresh connection sends the encrypted reasoning of earlier turns back as it came', async () => {
    const path = join(directory, 'thread.sqlite');
    server.enqueue(
      responsesSse(
        new ResponsesStreamWriter()
          .created()
          .reasoning('rs_R1', [['Call the tool.']], 'gAAAAB-rs_R1-sealed')
          .call('fc_R1', 'call_R1', 'get_weather', ['{"city":"Oslo"}'])
          .completed(usage),
      ),
      responsesSse(
        new ResponsesStreamWriter().created().message('msg_R2', ['3°C in Oslo.']).completed(usage),
      ),
      responsesSse(
        new ResponsesStreamWriter().created().message('msg_R3', ['Bring a coat.']).completed(usage),
      ),
    );

    const first = await SqliteStore.open({ path });
    const runtimeA = runtimeOn(first);
    const handle = await runtimeA.run({ threadId: 'thread-r', input: 'Weather in Oslo?' });
    await collectEvents(handle.events);
    expect((await handle.result).finalText).toBe('3°C in Oslo.');
    await first.close();

    // Nothing shared with the first runtime but the file.
    const second = await SqliteStore.open({ path });
    const runtimeB = runtimeOn(second);
    const next = await runtimeB.run({ threadId: 'thread-r', input: 'Do I need a coat?' });
    await collectEvents(next.events);
    expect((await next.result).finalText).toBe('Bring a coat.');
    await second.close();

    const input = (server.requests[2]!.body as { store: boolean; input: unknown[] }).input;
    expect((server.requests[2]!.body as { store: boolean }).store).toBe(false);
    expect(input).toEqual([
      { role: 'user', content: 'Weather in Oslo?' },
      {
        type: 'reasoning',
        id: 'rs_R1',
        summary: [{ type: 'summary_text', text: 'Call the tool.' }],
        encrypted_content: 'gAAAAB-rs_R1-sealed',
      },
      {
        type: 'function_call',
        call_id: 'call_R1',
        name: 'get_weather',
        arguments: '{"city":"Oslo"}',
        id: 'fc_R1',
      },
      { type: 'function_call_output', call_id: 'call_R1', output: '{"city":"Oslo","tempC":21}' },
      {
        type: 'message',
        role: 'assistant',
        id: 'msg_R2',
        status: 'completed',
        content: [{ type: 'output_text', text: '3°C in Oslo.', annotations: [] }],
      },
      { role: 'user', content: 'Do I need a coat?' },
    ]);
  });
});
