import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_IDEMPOTENCY_KEY_META } from '../src/index.js';
import { type NotesServer, startNotesServer } from './fixtures/notes-server.js';

const directory = mkdtempSync(join(tmpdir(), 'lunation-mcp-crash-'));
let notes: NotesServer;
beforeAll(async () => {
  notes = await startNotesServer();
});
afterAll(async () => {
  await notes.close();
  rmSync(directory, { recursive: true, force: true });
});

interface Started {
  child: ChildProcess;
  line(name: string): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
}

/** Starts the fixture from source (as the integration tests' process harness does). */
function start(config: Record<string, unknown>): Started {
  const fixture = fileURLToPath(new URL('./fixtures/mcp-agent-process.ts', import.meta.url));
  const child = spawn(
    process.execPath,
    ['--conditions=@lunation/source', '--import', 'tsx', fixture, JSON.stringify(config)],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } },
  );
  const lines: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  let buffered = '';
  let errors = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n')) {
      const text = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (text.startsWith('{')) lines.push(JSON.parse(text) as Record<string, unknown>);
    }
    for (const waiter of waiters.splice(0)) waiter();
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    errors += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    child,
    exited,
    async line(name) {
      for (;;) {
        const found = lines.find((line) => line.event === name || line.event === 'error');
        if (found?.event === 'error') throw new Error(`process failed: ${JSON.stringify(found)}\n${errors}`);
        if (found) return found;
        const code = await Promise.race([
          exited,
          new Promise<'more'>((resolve) => waiters.push(() => resolve('more'))),
        ]);
        if (code !== 'more' && !lines.some((line) => line.event === name)) {
          throw new Error(`process exited (${code}) before "${name}"; stderr:\n${errors}`);
        }
      }
    },
  };
}

describe('MCP calls and crashes (kill -9)', () => {
  it('re-runs an MCP call cut off by SIGKILL with the same idempotency key, and never re-runs a finished one', async () => {
    const base = {
      path: join(directory, 'crash.sqlite'),
      threadId: 'crash',
      url: notes.url,
      leaseTtlMs: 1_000,
    };
    const from = notes.calls.length;
    const doomed = start({ ...base, mode: 'run' });
    await doomed.line('running');
    const cutOff = await notes.nextCall('wait_for_release', from);
    doomed.child.kill('SIGKILL');
    expect(await doomed.exited).toBe(null);
    notes.release();

    const recovery = start({ ...base, mode: 'recover' });
    const ended = await recovery.line('ended');
    expect(await recovery.exited).toBe(0);
    expect(ended).toMatchObject({ status: 'done', finalText: 'All done.' });

    const seen = notes.calls.slice(from);
    expect(seen.map((call) => call.tool)).toEqual(['add_note', 'wait_for_release', 'wait_for_release']);
    const key = cutOff.meta[MCP_IDEMPOTENCY_KEY_META];
    expect(key).toEqual(expect.any(String));
    expect(seen[2]?.meta[MCP_IDEMPOTENCY_KEY_META]).toBe(key);
    expect(seen[1]?.meta['dev.lunation/rerun']).toBeUndefined();
    expect(seen[2]?.meta['dev.lunation/rerun']).toBe(true);
    expect(seen[0]?.meta[MCP_IDEMPOTENCY_KEY_META]).not.toBe(key);
    // The recovering process re-ran only the cut-off call, as a re-run with the same key.
    expect(ended.starts).toEqual([{ toolName: 'notes__wait_for_release', rerun: true, key }]);
  });
});
