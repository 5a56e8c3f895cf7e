import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/** A fixture process started from source, the way tests/integration starts them, with its JSON-lines output. */
export interface FixtureProcess {
  child: ChildProcessWithoutNullStreams;
  /** Resolves with the first message whose `event` is `event`; rejects on an `error` message or an early exit. */
  next(event: string): Promise<Record<string, unknown>>;
  /** Every message received so far, in order. */
  readonly messages: Record<string, unknown>[];
  /** Resolves when the process has exited. */
  exited: Promise<void>;
  /** Writes one JSON line to the process's stdin. */
  send(message: unknown): void;
}

/** Starts `script` (a .ts fixture) with `argument` as JSON in argv[2]. */
export function startFixture(script: string, argument: unknown): FixtureProcess {
  const child = spawn(
    process.execPath,
    ['--conditions=@lunation/source', '--import', tsx, script, JSON.stringify(argument)],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const messages: Record<string, unknown>[] = [];
  const waiters: {
    event: string;
    resolve(message: Record<string, unknown>): void;
    reject(error: Error): void;
  }[] = [];
  let exitedEarly = false;
  const exited = new Promise<void>((resolve) =>
    child.on('close', () => {
      exitedEarly = true;
      for (const waiter of waiters.splice(0)) {
        waiter.reject(new Error(`the fixture exited before "${waiter.event}"; stderr:\n${stderr}`));
      }
      resolve();
    }),
  );
  let buffered = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      if (line.trim() === '') continue;
      const message = JSON.parse(line) as Record<string, unknown>;
      messages.push(message);
      for (const waiter of [...waiters]) {
        if (message.event === 'error')
          waiter.reject(new Error(`the fixture failed: ${line}\nstderr:\n${stderr}`));
        else if (message.event === waiter.event) waiter.resolve(message);
        else continue;
        waiters.splice(waiters.indexOf(waiter), 1);
      }
    }
  });
  return {
    child,
    messages,
    exited,
    next(event) {
      const seen = messages.find((message) => message.event === event);
      if (seen !== undefined) return Promise.resolve(seen);
      if (exitedEarly)
        return Promise.reject(new Error(`the fixture exited before "${event}"; stderr:\n${stderr}`));
      return new Promise((resolve, reject) => waiters.push({ event, resolve, reject }));
    },
    send(message) {
      child.stdin.write(`${JSON.stringify(message)}\n`);
    },
  };
}
