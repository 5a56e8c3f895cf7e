import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ProcessConfig } from '../fixtures/agent-process.js';

export interface FixtureProcess {
  child: ChildProcess;
  /** Resolves with the first stdout JSON line whose `event` is `name`. */
  waitFor(name: string): Promise<Record<string, unknown>>;
  /** Calls `listener` with every stdout JSON line, from the first one on. */
  onLine(listener: (line: Record<string, unknown>) => void): void;
  /** Resolves with the exit code (`null` when a signal ended the process). */
  exited: Promise<number | null>;
  stderr(): string;
}

export type AgentProcess = FixtureProcess;

/** Starts the fixture runtime process from source. */
export function startAgentProcess(config: ProcessConfig): AgentProcess {
  return startFixtureProcess('agent-process.ts', config);
}

/** Starts `fixtures/<name>` from source with its JSON config as the only argument. */
export function startFixtureProcess(name: string, config: unknown): FixtureProcess {
  const fixture = fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
  const child = spawn(
    process.execPath,
    ['--conditions=@lunation/source', '--import', 'tsx', fixture, JSON.stringify(config)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_OPTIONS: '' },
    },
  );
  const lines: Array<Record<string, unknown>> = [];
  const listeners: Array<(line: Record<string, unknown>) => void> = [];
  const waiters: Array<{
    name: string;
    resolve: (value: Record<string, unknown>) => void;
    reject: (error: Error) => void;
  }> = [];
  let buffered = '';
  let errors = '';
  const deliver = (line: Record<string, unknown>) => {
    lines.push(line);
    for (const listener of listeners) listener(line);
    for (const waiter of [...waiters]) {
      if (line.event === waiter.name || line.event === 'error') {
        waiters.splice(waiters.indexOf(waiter), 1);
        if (line.event === 'error' && waiter.name !== 'error')
          waiter.reject(new Error(`agent process failed: ${JSON.stringify(line)}`));
        else waiter.resolve(line);
      }
    }
  };
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (line.startsWith('{')) deliver(JSON.parse(line) as Record<string, unknown>);
      newline = buffered.indexOf('\n');
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    errors += chunk;
  });
  // 'close', not 'exit': stdout is read to its end before the exit is reported.
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  exited.then(() => {
    for (const waiter of waiters.splice(0))
      waiter.reject(new Error(`agent process exited before "${waiter.name}"; stderr:\n${errors}`));
  });
  return {
    child,
    exited,
    stderr: () => errors,
    onLine(listener) {
      for (const line of lines) listener(line);
      listeners.push(listener);
    },
    waitFor(name) {
      const seen = lines.find((line) => line.event === name);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => waiters.push({ name, resolve, reject }));
    },
  };
}
