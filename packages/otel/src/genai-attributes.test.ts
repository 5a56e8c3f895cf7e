import { readFileSync } from 'node:fs';
import { LunationError, type PortableTool } from '@lunation/contract';
import { createRuntime, defineTool } from '@lunation/runtime';
import { callTool, reply, ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openTelemetryInstrumentation, TRACER_NAME } from './index.js';

/** Personal data a tool's error, and a provider's error, carry in their text. */
const SECRET = 'Card 4111-1111-1111-1111 of Jane Doe';

/** A tool as `@lunation/mcp` makes one: its results carry `metadata.mcp` naming the server and tool. */
const mcpLookup: PortableTool = {
  descriptor: {
    name: 'notes__lookup',
    description: 'Looks a note up (MCP server "notes")',
    parameters: { type: 'object' },
  },
  inputSchema: undefined,
  execute: (_input, context) =>
    context.output({
      status: 'success',
      message: 'found it',
      metadata: { mcp: { server: 'notes', tool: 'lookup' } },
    }),
};

async function traced(script: ScriptedResponse[], captureMessageContent: boolean) {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const charge = defineTool({
    name: 'charge',
    description: 'Charges a card',
    input: z.object({ amount: z.number() }),
    execute: () => {
      throw new Error(`${SECRET} was declined`);
    },
  });
  const runtime = createRuntime()
    .model('m', new ScriptedModel(script))
    .agent({ id: 'a', model: 'm', tools: [charge, mcpLookup] })
    .instrumentation(openTelemetryInstrumentation({ tracerProvider, captureMessageContent }))
    .build();
  await runtime.generate({ threadId: 't', input: 'Pay 5' }).catch(() => undefined);
  await tracerProvider.forceFlush();
  return exporter.getFinishedSpans();
}

function span(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = spans.find((candidate) => candidate.name === name);
  if (!found) throw new Error(`no span "${name}" in ${spans.map((candidate) => candidate.name).join(', ')}`);
  return found;
}

/** Every status message and event attribute value of the spans, as text. */
function statusAndEventTexts(spans: ReadableSpan[]): string[] {
  return spans.flatMap((one) => [
    one.status.message ?? '',
    ...one.events.flatMap((event) => Object.values(event.attributes ?? {}).map(String)),
  ]);
}

describe('GenAI attributes and message contents', () => {
  it('keeps an error tool result’s and a failed model call’s text out of status messages and events with contents off', async () => {
    const failing: ScriptedResponse[] = [
      callTool('charge', { amount: 5 }),
      { error: new LunationError('provider-error', `The provider rejected "${SECRET}"`) },
    ];
    const spans = await traced(failing, false);
    const tool = span(spans, 'execute_tool charge');
    expect(tool.status).toEqual({ code: 2, message: 'tool_error' });
    expect(tool.attributes['error.type']).toBe('tool_error');
    const chats = spans.filter((one) => one.name === 'chat scripted');
    expect(chats).toHaveLength(2);
    expect(chats.map((chat) => chat.status.message)).toContain('provider-error');
    expect(span(spans, 'invoke_agent a').status).toEqual({ code: 2, message: 'provider-error' });
    const texts = statusAndEventTexts(spans);
    expect(texts.filter((text) => text.includes('Jane Doe'))).toEqual([]);
    // The failure is still recorded as an exception event, by type only.
    const failedChat = chats.find((chat) => chat.status.message === 'provider-error');
    expect(failedChat?.events.map((event) => [event.name, event.attributes])).toEqual([
      ['exception', { 'exception.type': 'provider-error' }],
    ]);

    // With contents on, the texts are kept as before.
    const withContents = await traced(failing, true);
    expect(span(withContents, 'execute_tool charge').status.message).toContain('Jane Doe');
    expect(span(withContents, 'invoke_agent a').status.message).toContain('Jane Doe');
  });

  it('types an MCP tool `extension` and a defined one `function`, with each tool’s description', async () => {
    const spans = await traced(
      [
        {
          toolCalls: [
            { toolName: 'notes__lookup', arguments: {} },
            { toolName: 'charge', arguments: { amount: 5 } },
          ],
        },
        reply('done'),
      ],
      false,
    );
    const lookup = span(spans, 'execute_tool notes__lookup');
    expect(lookup.attributes['gen_ai.tool.type']).toBe('extension');
    expect(lookup.attributes['gen_ai.tool.description']).toBe('Looks a note up (MCP server "notes")');
    const charge = span(spans, 'execute_tool charge');
    expect(charge.attributes['gen_ai.tool.type']).toBe('function');
    expect(charge.attributes['gen_ai.tool.description']).toBe('Charges a card');
  });

  it('sets gen_ai.response.id when the provider gives a response id, and the tracer’s scope version', async () => {
    const spans = await traced(
      [
        {
          parts: [
            { type: 'text-delta', delta: 'ok' },
            {
              type: 'finish',
              stopReason: 'end-turn',
              providerMetadata: { scripted: { responseId: 'resp_42' } },
            },
          ],
        },
      ],
      false,
    );
    const chat = span(spans, 'chat scripted');
    expect(chat.attributes['gen_ai.response.id']).toBe('resp_42');
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(manifest.version).toMatch(/^\d+\.\d+\.\d+/);
    for (const one of spans) {
      expect(one.instrumentationScope).toMatchObject({ name: TRACER_NAME, version: manifest.version });
    }

    const without = await traced([reply('ok')], false);
    expect(span(without, 'chat scripted').attributes).not.toHaveProperty('gen_ai.response.id');
  });
});
