import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AgentEvent } from '@lunation/contract';

const appDir = fileURLToPath(new URL('..', import.meta.url));

/** A temporary folder, removed by `remove()`. */
export async function temporaryDir(): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), 'lunation-assistant-'));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** The app's folder, where its `start` script runs. */
export const APP_DIR = appDir;

/** How `pnpm start` runs the app (after `node`), from the app's folder. */
export const APP_COMMAND = ['--conditions=@lunation/source', '--import', 'tsx', 'src/main.ts'];

/** This process's environment without the keys and settings that would change what the app does. */
export function appEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const name of [
    'OPENAI_API_KEY',
    'ANTHROPIC_API_KEY',
    'ASSISTANT_TOKENS',
    'INIT_CWD',
    'REDIS_URL',
    'npm_lifecycle_event',
  ]) {
    delete env[name];
  }
  return env;
}

/** The app running in a child process, as `pnpm start` runs it (from source through tsx). */
export class AppProcess {
  readonly child: ChildProcessWithoutNullStreams;
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;
  private readonly waiters = new Set<() => void>();

  constructor(args: string[], env: Record<string, string> = {}) {
    this.child = spawn(process.execPath, [...APP_COMMAND, ...args], {
      cwd: appDir,
      env: { ...appEnvironment(), ...env },
    });
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      this.stdout += chunk;
      for (const wake of this.waiters) wake();
    });
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    void this.exited.then(() => {
      for (const wake of this.waiters) wake();
    });
  }

  /** Writes stdin lines, then closes stdin when `end` is set. */
  send(lines: string[], options: { end?: boolean } = {}): void {
    this.child.stdin.write(lines.map((line) => `${line}\n`).join(''));
    if (options.end) this.child.stdin.end();
  }

  /** Resolves with the first match of `pattern` in stdout; rejects if the process exits first. */
  async waitFor(pattern: RegExp): Promise<RegExpMatchArray> {
    while (true) {
      const match = this.stdout.match(pattern);
      if (match) return match;
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(
          `The app exited before printing ${pattern}.\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`,
        );
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.waiters.delete(wake);
          resolve();
        };
        this.waiters.add(wake);
      });
    }
  }

  /** Kills the process if it still runs (safe to call in afterEach). */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }
}

/** One Server-Sent Event as received. */
export interface ServerSentEvent {
  event: string;
  data: AgentEvent;
}

/** Parses a `text/event-stream` body event by event; comment lines (`: keep-alive`) are skipped. */
export async function* readEventStream(response: Response): AsyncGenerator<ServerSentEvent> {
  if (!response.body) throw new Error('The response has no body');
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length > 0) yield { event, data: JSON.parse(data.join('\n')) as AgentEvent };
    }
  }
}

/**
 * Reads events into `into` until one of type `type` (inclusive); the stream stays open for more reads.
 * Fails if the stream ends first.
 */
export async function readUntil(
  stream: AsyncGenerator<ServerSentEvent>,
  type: string,
  into: ServerSentEvent[],
): Promise<void> {
  while (true) {
    const next = await stream.next();
    if (next.done) throw new Error(`The event stream ended before a "${type}" event`);
    into.push(next.value);
    if (next.value.event === type) return;
  }
}

/** Every event of an SSE response. */
export async function collectEventStream(response: Response): Promise<ServerSentEvent[]> {
  const events: ServerSentEvent[] = [];
  for await (const event of readEventStream(response)) events.push(event);
  return events;
}

/** The `run-end` event of a list of events (fails loudly when there is none). */
export function runEnd(events: readonly ServerSentEvent[]): Extract<AgentEvent, { type: 'run-end' }> {
  const last = events.at(-1)?.data;
  if (last?.type !== 'run-end')
    throw new Error(`The stream did not end with run-end: ${JSON.stringify(last)}`);
  return last;
}
