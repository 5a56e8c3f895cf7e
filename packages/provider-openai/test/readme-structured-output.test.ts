import { readFileSync } from 'node:fs';
import { useScriptedServer } from '@lunation/provider-testkit';
import { chunk, done, streamHeaders, usageChunk } from '@lunation/provider-testkit/wires/openai-chat';
import { afterAll, describe, expect, it, vi } from 'vitest';

const server = useScriptedServer();
afterAll(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

const usage = {
  inputTokens: 90,
  outputTokens: 12,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};
const sse = (...events: string[]) => ({ status: 200, headers: streamHeaders(), body: events });
const role = chunk({ role: 'assistant', content: '', refusal: null });

describe('README structured output example', () => {
  it('is the code in examples/structured-output.ts, word for word', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const example = readFileSync(new URL('../examples/structured-output.ts', import.meta.url), 'utf8');
    expect(readme).toContain(example.replace("'../src/index.js'", "'@lunation/provider-openai'").trim());
  });

  it('runs: a tool call, then the typed object, over the Chat Completions wire', async () => {
    server.enqueue(
      sse(
        role,
        chunk({
          tool_calls: [
            { index: 0, id: 'call_R1', type: 'function', function: { name: 'get_weather', arguments: '' } },
          ],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] }),
        chunk({}, 'tool_calls'),
        usageChunk(usage),
        done,
      ),
      sse(
        role,
        chunk({ content: '{"city":"Paris","celsius":9,"coat":true,' }),
        chunk({ content: '"why":"9°C and rain."}' }),
        chunk({}, 'stop'),
        usageChunk(usage),
        done,
      ),
    );
    // The example names no server: the openai SDK reads these.
    vi.stubEnv('OPENAI_BASE_URL', `${server.url}/v1`);
    vi.stubEnv('OPENAI_API_KEY', 'sk-test');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    await import('../examples/structured-output.js');

    expect(log.mock.calls).toEqual([['Take a coat: 9°C and rain.']]);
    expect(server.requests).toHaveLength(2);
    for (const request of server.requests) {
      expect(request.path).toBe('/v1/chat/completions');
      expect(request.body).toMatchObject({
        model: 'gpt-4.1-mini',
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'output',
            strict: true,
            schema: { required: ['city', 'celsius', 'coat', 'why'] },
          },
        },
      });
    }
  });
});
