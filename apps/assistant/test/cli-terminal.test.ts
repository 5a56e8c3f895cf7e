import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { temporaryDir } from './support.js';
import { TerminalProcess } from './terminal-process.js';

const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'gpt-5.4-mini',
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  })}\n\n`;

describe('the CLI chat in a terminal (pseudo-terminal, slow OpenAI-compatible server)', {
  timeout: 60_000,
}, () => {
  let server: Server;
  let baseURL: string;
  /** Sends the held answer; set while a request waits. */
  let release: (() => void) | undefined;
  let requested: Promise<void>;
  let dataDir: Awaited<ReturnType<typeof temporaryDir>>;
  let app: TerminalProcess | undefined;

  beforeEach(async () => {
    dataDir = await temporaryDir();
    let received: () => void;
    requested = new Promise((resolve) => {
      received = resolve;
    });
    // Answers only when the test says so: the model "thinks" for as long as the test needs.
    server = createServer((request, response) => {
      request.resume().on('end', () => {
        received();
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        release = () =>
          response.end(
            `${chunk({ role: 'assistant', content: 'Hi after ' })}${chunk({ content: 'a long think.' })}` +
              `${chunk({}, 'stop')}data: [DONE]\n\n`,
          );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });

  afterEach(async () => {
    await app?.stop();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await dataDir.remove();
  });

  it('shows a spinner while the model thinks and removes it at the first token', async () => {
    app = new TerminalProcess(['--store', 'memory', '--data-dir', dataDir.path], {
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: baseURL,
    });
    await app.waitFor(/you> $/);
    app.type('hello');
    await requested;
    await app.waitFor(/thinking…/);
    expect(app.text).not.toContain('assistant>');
    release?.();
    await app.waitFor(/assistant> Hi after a long think\./);
    await app.waitFor(/you> $/);
    // The spinner was last drawn before the reply, and erased (carriage return, erase line) in between.
    const spinnerAt = app.raw.lastIndexOf('thinking…');
    const replyAt = app.raw.indexOf('assistant> Hi after');
    expect(spinnerAt).toBeLessThan(replyAt);
    expect(app.raw.slice(spinnerAt, replyAt)).toContain('\r\x1b[K');
    app.type('/exit');
    expect(await app.exited).toBe(0);
  });

  it('leaves at /exit typed at the approval prompt, keeping the approval open', async () => {
    app = new TerminalProcess(['--provider', 'demo', '--data-dir', dataDir.path]);
    await app.waitFor(/you> $/);
    app.type('hello');
    await app.waitFor(/allow\? \[y\]es \/ \[n\]o \/ \[a\]lways: $/);
    app.type('/help');
    await app.waitFor(/Commands \(also at an approval prompt\)[^\n]*\n\s+allow\? .*: $/);
    app.type('/exit');
    expect(await app.exited).toBe(0);
    expect(app.text).toMatch(
      /The approval stays open; answer it later with: pnpm start --thread [0-9a-f-]{36} --provider demo --data-dir \S+\n$/,
    );
  });
});
