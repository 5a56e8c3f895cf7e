import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppProcess, temporaryDir } from './support.js';

interface ReceivedRequest {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: { model?: string; stream?: boolean; tools?: Array<Record<string, unknown>> };
}

const sse = (events: Array<[string | undefined, unknown]>) =>
  events
    .map(
      ([event, data]) =>
        `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`,
    )
    .join('');

const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'gpt-5.4-mini',
  choices: [{ index: 0, delta, finish_reason: finishReason }],
});

/** One streamed answer, "Hi from the fake server.", in each vendor's wire format. */
const ANSWERS: Record<string, string> = {
  '/v1/chat/completions': sse([
    [undefined, chunk({ role: 'assistant', content: 'Hi from ' })],
    [undefined, chunk({ content: 'the fake server.' })],
    [undefined, chunk({}, 'stop')],
    [
      undefined,
      { ...chunk({}), choices: [], usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } },
    ],
    [undefined, '[DONE]'],
  ]),
  '/v1/messages': sse([
    [
      'message_start',
      {
        type: 'message_start',
        message: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-test',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 12, output_tokens: 1 },
        },
      },
    ],
    [
      'content_block_start',
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    ],
    [
      'content_block_delta',
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi from ' } },
    ],
    [
      'content_block_delta',
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'the fake server.' } },
    ],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    [
      'message_delta',
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: 5 },
      },
    ],
    ['message_stop', { type: 'message_stop' }],
  ]),
};

describe('real providers, chosen and configured from the environment', { timeout: 60_000 }, () => {
  let server: Server;
  let url: string;
  let received: ReceivedRequest[];
  let dataDir: Awaited<ReturnType<typeof temporaryDir>>;
  let app: AppProcess | undefined;

  beforeEach(async () => {
    received = [];
    dataDir = await temporaryDir();
    server = createServer((request, response) => {
      let text = '';
      request.setEncoding('utf8').on('data', (piece: string) => {
        text += piece;
      });
      request.on('end', () => {
        const path = request.url ?? '';
        received.push({ path, headers: request.headers, body: JSON.parse(text || '{}') });
        const answer = ANSWERS[path];
        if (!answer) {
          response.writeHead(404).end();
          return;
        }
        response.writeHead(200, { 'content-type': 'text/event-stream' }).end(answer);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterEach(async () => {
    await app?.stop();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await dataDir.remove();
  });

  it.each([
    {
      name: 'OpenAI (OPENAI_API_KEY, OPENAI_BASE_URL, default model)',
      args: [],
      env: (base: string) => ({ OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: `${base}/v1` }),
      banner: 'Model: openai gpt-5.4-mini',
      path: '/v1/chat/completions',
      model: 'gpt-5.4-mini',
    },
    {
      name: 'Anthropic (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, --model)',
      args: ['--model', 'claude-test'],
      env: (base: string) => ({ ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: base }),
      banner: 'Model: anthropic claude-test',
      path: '/v1/messages',
      model: 'claude-test',
    },
  ])('$name', async ({ args, env, banner, path, model }) => {
    app = new AppProcess(['--store', 'memory', '--data-dir', dataDir.path, ...args], env(url));
    app.send(['hello', '/exit'], { end: true });
    expect(await app.exited).toBe(0);
    expect(app.stdout).toContain(banner);
    expect(app.stdout).toContain('assistant> Hi from the fake server.');
    expect(received).toHaveLength(1);
    const [request] = received;
    expect(request?.path).toBe(path);
    expect(request?.headers.authorization).toBe('Bearer test-key');
    expect(request?.body).toMatchObject({ model, stream: true });
    const toolNames = request?.body.tools?.map(
      (tool) => (tool.name ?? (tool.function as { name: string }).name) as string,
    );
    expect(toolNames?.sort()).toEqual(['ask_user', 'calculator', 'current_time', 'read_file', 'slow_task']);
  });
});
