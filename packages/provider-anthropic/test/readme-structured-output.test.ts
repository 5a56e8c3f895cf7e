import { readFileSync } from 'node:fs';
import { useScriptedServer } from '@lunation/provider-testkit';
import {
  blockDelta,
  blockStart,
  blockStop,
  messageDelta,
  messageStart,
  messageStop,
  streamHeaders,
} from '@lunation/provider-testkit/wires/anthropic-messages';
import { afterAll, describe, expect, it, vi } from 'vitest';

const server = useScriptedServer();
afterAll(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

const sse = (...events: string[]) => ({ status: 200, headers: streamHeaders(), body: events });

describe('README structured output example', () => {
  it('is the code in examples/structured-output.ts, word for word', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const example = readFileSync(new URL('../examples/structured-output.ts', import.meta.url), 'utf8');
    expect(readme).toContain(example.replace("'../src/index.js'", "'@lunation/provider-anthropic'").trim());
  });

  it('runs: a tool call, then the typed object, over the Messages wire with output_config.format', async () => {
    server.enqueue(
      sse(
        messageStart({ input_tokens: 300, output_tokens: 1 }),
        blockStart(0, { type: 'tool_use', id: 'toolu_01R', name: 'find_order', input: {} }),
        blockDelta(0, { type: 'input_json_delta', partial_json: '{"orderId": "1234"}' }),
        blockStop(0),
        messageDelta('tool_use', { output_tokens: 30 }),
        messageStop,
      ),
      sse(
        messageStart({ input_tokens: 360, output_tokens: 1 }),
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: '{"orderId": "1234", "category": "damaged", ' }),
        blockDelta(0, {
          type: 'text_delta',
          text: '"itemsAffected": 2, "reply": "Sorry! Replacements are on the way."}',
        }),
        blockStop(0),
        messageDelta('end_turn', { output_tokens: 40 }),
        messageStop,
      ),
    );
    // The example names no server: the Anthropic SDK reads these.
    vi.stubEnv('ANTHROPIC_BASE_URL', server.url);
    vi.stubEnv('ANTHROPIC_API_KEY', 'sk-ant-test');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    await import('../examples/structured-output.js');

    expect(log.mock.calls).toEqual([['damaged x2: Sorry! Replacements are on the way.']]);
    expect(server.requests).toHaveLength(2);
    for (const request of server.requests) {
      expect(request.path).toBe('/v1/messages');
      expect((request.body as { output_config: unknown }).output_config).toEqual({
        format: {
          type: 'json_schema',
          schema: {
            type: 'object',
            properties: {
              orderId: { type: 'string' },
              category: { type: 'string', enum: ['damaged', 'missing', 'late', 'other'] },
              itemsAffected: { type: 'integer', description: '{minimum: 1}' },
              reply: { type: 'string' },
            },
            required: ['orderId', 'category', 'itemsAffected', 'reply'],
            additionalProperties: false,
          },
        },
      });
    }
  });
});
