import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ProcessConfig } from '../fixtures/agent-process.js';

const fixture = fileURLToPath(new URL('../fixtures/agent-process.ts', import.meta.url));

export interface AgentProcess {
  child: ChildProcess;
  /** Resolves with the first stdout JSON line whose `event` is `name`. */
  waitFor(name: string): Promise<Record<string, unknown>>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  stderr(): string;
}

/** Starts the fixture runtime process from source. */
export function startAgentProcess(config: ProcessConfig): AgentProcess {
  const child = spawn(
    process.execPath,
    ['--conditions=@lunation/source', '--import', 'tsx', fixture, JSON.stringify(config)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_OPTIONS: '' },
    },
  );
  const lines: Array<Record<string, unknown>> = [];
  const waiters: Array<{
    name: string;
    resolve: (value: Record<string, unknown>) => void;
    reject: (error: Error) => void;
  }> = [];
  let buffered = '';
  let errors = '';
  const deliver = (line: Record<string, unknown>) => {
    lines.push(line);
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
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  exited.then(() => {
    for (const waiter of waiters.splice(0))
      waiter.reject(new Error(`agent process exited before "${waiter.name}"; stderr:\n${errors}`));
  });
  return {
    child,
    exited,
    stderr: () => errors,
    waitFor(name) {
      const seen = lines.find((line) => line.event === name);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => waiters.push({ name, resolve, reject }));
    },
  };
}
