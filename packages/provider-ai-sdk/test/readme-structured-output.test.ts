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
    expect(readme).toContain(example.replace("'../src/index.js'", "'@lunation/provider-ai-sdk'").trim());
  });

  it('runs: the typed object through @ai-sdk/anthropic, over the Messages wire with output_config.format', async () => {
    const json = JSON.stringify({
      vendor: 'ACME Ltd.',
      total: 49.5,
      currency: 'EUR',
      lines: [
        { item: 'widget', amount: 40 },
        { item: 'shipping', amount: 9.5 },
      ],
    });
    server.enqueue(
      sse(
        messageStart({ input_tokens: 80, output_tokens: 1 }),
        blockStart(0, { type: 'text', text: '' }),
        blockDelta(0, { type: 'text_delta', text: json.slice(0, 40) }),
        blockDelta(0, { type: 'text_delta', text: json.slice(40) }),
        blockStop(0),
        messageDelta('end_turn', { output_tokens: 60 }),
        messageStop,
      ),
    );
    // The example names no server: the default `anthropic` provider reads these when it is first imported,
    // which is by the example (this file does not import @ai-sdk/anthropic).
    vi.stubEnv('ANTHROPIC_BASE_URL', `${server.url}/v1`);
    vi.stubEnv('ANTHROPIC_API_KEY', 'sk-ant-test');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    await import('../examples/structured-output.js');

    expect(log.mock.calls).toEqual([['ACME Ltd.: 49.5 EUR']]);
    expect(server.requests).toHaveLength(1);
    const body = server.requests[0]!.body as Record<string, unknown>;
    expect(server.requests[0]!.path).toBe('/v1/messages');
    expect(body.output_config).toEqual({
      format: {
        type: 'json_schema',
        schema: {
          type: 'object',
          properties: {
            vendor: { type: 'string' },
            total: { type: 'number' },
            currency: { type: 'string', enum: ['EUR', 'USD', 'GBP'] },
            lines: {
              type: 'array',
              items: {
                type: 'object',
                properties: { item: { type: 'string' }, amount: { type: 'number' } },
                required: ['item', 'amount'],
                additionalProperties: false,
              },
            },
          },
          required: ['vendor', 'total', 'currency', 'lines'],
          additionalProperties: false,
        },
      },
    });
  });
});
