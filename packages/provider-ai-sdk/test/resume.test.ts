import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
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
import { afterAll, describe, expect, it } from 'vitest';
import type { BridgeProcessConfig } from './fixtures/bridge-process.js';

const fixture = fileURLToPath(new URL('./fixtures/bridge-process.ts', import.meta.url));
const server = useScriptedServer();
const directory = mkdtempSync(join(tmpdir(), 'lunation-ai-sdk-'));

afterAll(() => {
  rmSync(directory, { recursive: true, force: true });
});

/** Runs the fixture in a new Node process (from source) and returns its outcome line. */
function runProcess(config: BridgeProcessConfig): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--conditions=@lunation/source', '--import', 'tsx', fixture, JSON.stringify(config)],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('exit', (code) => {
      const line = stdout.split('\n').find((text) => text.startsWith('{'));
      if (code !== 0 || line === undefined)
        reject(new Error(`bridge process exited ${code}: ${stdout}\n${stderr}`));
      else resolve(JSON.parse(line) as Record<string, unknown>);
    });
  });
}

describe('AiSdkModel across processes', () => {
  it('keeps the Anthropic thinking signature in the SQLite store, so a new process resumes the run and sends it back', async () => {
    server.enqueue(
      {
        status: 200,
        headers: streamHeaders(),
        body: [
          messageStart({ input_tokens: 300, output_tokens: 1 }),
          blockStart(0, { type: 'thinking', thinking: '', signature: '' }),
          blockDelta(0, { type: 'thinking_delta', thinking: 'Paris weather: call the tool.' }),
          blockDelta(0, { type: 'signature_delta', signature: 'EuYBCkQYAiJAsig-cross-process' }),
          blockStop(0),
          blockStart(1, { type: 'tool_use', id: 'toolu_01R', name: 'get_weather', input: {} }),
          blockDelta(1, { type: 'input_json_delta', partial_json: '{"city":"Paris"}' }),
          blockStop(1),
          messageDelta('tool_use', { output_tokens: 40 }),
          messageStop,
        ],
      },
      {
        status: 200,
        headers: streamHeaders(),
        body: [
          messageStart({ input_tokens: 350, output_tokens: 1 }),
          blockStart(0, { type: 'text', text: '' }),
          blockDelta(0, { type: 'text_delta', text: 'It is 21°C in Paris.' }),
          blockStop(0),
          messageDelta('end_turn', { output_tokens: 9 }),
          messageStop,
        ],
      },
    );
    const base = { baseURL: server.url, path: join(directory, 'threads.sqlite'), threadId: 'thread-resume' };
    const suspended = await runProcess({ ...base, mode: 'suspend' });
    expect(suspended).toMatchObject({ event: 'ended', status: 'waiting', ticketId: expect.any(String) });
    expect(server.requests).toHaveLength(1);

    const resumed = await runProcess({ ...base, mode: 'resume', ticketId: String(suspended.ticketId) });
    expect(resumed).toMatchObject({ event: 'ended', status: 'done', finalText: 'It is 21°C in Paris.' });
    expect(resumed.pid).not.toBe(suspended.pid);
    expect(server.requests).toHaveLength(2);
    const messages = (server.requests[1]!.body as { messages: Array<{ role: string; content: unknown[] }> })
      .messages;
    expect(messages[1]).toEqual({
      role: 'assistant',
      content: [
        {
          type: 'thinking',
          thinking: 'Paris weather: call the tool.',
          signature: 'EuYBCkQYAiJAsig-cross-process',
        },
        { type: 'tool_use', id: 'toolu_01R', name: 'get_weather', input: { city: 'Paris' } },
      ],
    });
    expect(messages[2]).toMatchObject({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_01R' }],
    });
  });
});
