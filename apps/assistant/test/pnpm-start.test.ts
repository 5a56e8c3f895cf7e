import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { appEnvironment, temporaryDir } from './support.js';

const repository = fileURLToPath(new URL('../../..', import.meta.url));

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function answers(url: string): Promise<boolean> {
  return fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
    (response) => response.ok,
    () => false,
  );
}

describe('pnpm start, as the README backgrounds it', () => {
  it('a SIGTERM to the pnpm process stops the server: nothing is left on its port', {
    timeout: 180_000,
  }, async () => {
    const data = await temporaryDir();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/healthz`;
    const args = ['start', 'serve', '--store', 'memory', '--port', String(port), '--data-dir', data.path];
    // pnpm as the README runs it (from PATH, as in CI).
    const child = spawn('pnpm', args, { cwd: repository, env: appEnvironment(), stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      child.once('exit', (code, signal) => resolve(signal ?? code)),
    );
    try {
      const deadline = Date.now() + 120_000;
      while (!(await answers(url))) {
        if (Date.now() > deadline) throw new Error(`pnpm start serve did not answer ${url} within 120 s`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      child.kill('SIGTERM');
      await exited;
      // The server itself (node, under pnpm) is gone too: its port no longer answers.
      const stopped = Date.now() + 30_000;
      while (await answers(url)) {
        if (Date.now() > stopped)
          throw new Error(`The server still answers ${url} 30 s after pnpm was stopped`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(await answers(url)).toBe(false);
    } finally {
      child.kill('SIGKILL');
      await data.remove();
    }
  });
});
