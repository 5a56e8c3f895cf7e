import { type ChildProcess, spawn } from 'node:child_process';
import { createConnection, createServer, type Server } from 'node:net';
import { LocalDispatchBackend, LocalDispatcher } from '@lunation/fleet';
import { MemoryStore } from '@lunation/store-memory';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AssistantServer } from '../src/assistant-server.js';
import { createAssistantRuntime } from '../src/create-assistant-runtime.js';
import { DemoModel } from '../src/demo-model.js';
import { APP_DIR, AppProcess, appEnvironment, collectEventStream, runEnd, temporaryDir } from './support.js';

/** The value of the sample `name{labels,...}` of a Prometheus text exposition (labels: the leading ones). */
export function sample(text: string, name: string, labels: string): number | undefined {
  const line = text
    .split('\n')
    .find((each) => each.startsWith(`${name}{${labels}`) && !each.includes(',le="'));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('the sample server for operators: health, readiness and Prometheus metrics over real HTTP', {
  timeout: 90_000,
}, () => {
  let dataDir: Awaited<ReturnType<typeof temporaryDir>>;
  const processes: AppProcess[] = [];

  beforeEach(async () => {
    dataDir = await temporaryDir();
  });

  afterEach(async () => {
    await Promise.all(processes.splice(0).map((app) => app.stop()));
    await dataDir.remove();
  });

  it('answers /healthz and /readyz, and /metrics has the GenAI and run figures after a run', async () => {
    const app = new AppProcess(['serve', '--port', '0', '--provider', 'demo', '--data-dir', dataDir.path]);
    processes.push(app);
    const url = (await app.waitFor(/listening on (http:\/\/\S+)/))[1] as string;
    await app.waitFor(/Health: /);

    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { store: 'ok' } });

    const threadId = (
      (await (await fetch(`${url}/threads`, { method: 'POST' })).json()) as { thread: { id: string } }
    ).thread.id;
    const events = await collectEventStream(
      await fetch(`${url}/threads/${threadId}/messages`, {
        method: 'POST',
        body: JSON.stringify({ text: 'run the slow task with 1 steps' }),
        headers: { 'content-type': 'application/json' },
      }),
    );
    expect(runEnd(events).status).toBe('done');

    const scraped = await fetch(`${url}/metrics`);
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await scraped.text();
    expect(text).toContain('# TYPE gen_ai_client_operation_duration histogram');
    expect(text).toContain('# UNIT gen_ai_client_operation_duration s');
    const chat = 'gen_ai_operation_name="chat",gen_ai_provider_name="demo",gen_ai_request_model="demo"';
    // The slow task's call and the answer after it: two model calls.
    expect(sample(text, 'gen_ai_client_operation_duration_count', chat)).toBe(2);
    expect(sample(text, 'gen_ai_client_token_usage_count', `${chat},gen_ai_token_type="input"`)).toBe(2);
    expect(
      sample(text, 'gen_ai_client_token_usage_sum', `${chat},gen_ai_token_type="output"`),
    ).toBeGreaterThan(0);
    expect(sample(text, 'lunation_runs_active', 'gen_ai_agent_id="assistant"')).toBe(0);
  });
});

describe('/readyz', () => {
  it('answers 503 naming what does not answer: a store that fails, a dispatcher that hangs', async () => {
    const store = new MemoryStore();
    store.listThreads = () => Promise.reject(new Error('connection refused'));
    const hanging = new LocalDispatcher({ backend: new LocalDispatchBackend() });
    hanging.depth = () => new Promise(() => {});
    const dir = await temporaryDir();
    const server = new AssistantServer({
      runtime: createAssistantRuntime({ model: new DemoModel(), store, sandbox: dir.path }),
      store,
      dispatcher: hanging,
      readyTimeoutMs: 200,
    });
    const url = await server.listen(0, '127.0.0.1');
    try {
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({
        status: 'unavailable',
        checks: { store: 'connection refused', dispatcher: 'no answer within 200 ms' },
      });
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      // No metrics were given: /metrics is the API's 404.
      expect((await fetch(`${url}/metrics`)).status).toBe(404);
    } finally {
      await server.close();
      await hanging.close();
      await dir.remove();
    }
  });
});

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function until(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

describe('starting and stopping the app', { timeout: 90_000 }, () => {
  const children: ChildProcess[] = [];
  const servers: Server[] = [];
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    for (const server of servers.splice(0)) server.close();
  });

  it('stops the node server when `pnpm start serve` (the wrapper) is killed: the port is freed', async () => {
    const port = await freePort();
    const dir = await temporaryDir();
    const wrapper = spawn(
      'pnpm',
      ['start', 'serve', '--port', String(port), '--provider', 'demo', '--data-dir', dir.path],
      { cwd: APP_DIR, env: appEnvironment(), stdio: 'ignore' },
    );
    children.push(wrapper);
    expect(await until(() => accepts(port), 60_000)).toBe(true);
    wrapper.kill('SIGTERM');
    // The node process got the signal (it shuts down gracefully): nothing listens on the port any more.
    expect(await until(async () => !(await accepts(port)), 15_000)).toBe(true);
    await dir.remove();
  });

  it('waits for a Redis that answers only 7 s after the first connection, longer than one 5 s attempt (ASSISTANT_STARTUP_WAIT)', async () => {
    // A Redis that answers nothing for 7 s after the app first connects (as a starved process sees it): a proxy to
    // the real one that holds every connection until then.
    let answersAt: number | undefined;
    const proxy = createServer((client) => {
      answersAt ??= Date.now() + 7_000;
      client.on('error', () => {});
      setTimeout(
        () => {
          const upstream = createConnection({ port: 6379, host: '127.0.0.1' });
          upstream.on('error', () => client.destroy());
          client.pipe(upstream).pipe(client);
        },
        Math.max(0, answersAt - Date.now()),
      );
    });
    servers.push(proxy);
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const { port } = proxy.address() as { port: number };
    const dir = await temporaryDir();
    const app = new AppProcess(
      [
        'serve',
        '--port',
        '0',
        '--provider',
        'demo',
        '--store',
        'redis',
        '--redis-url',
        `redis://127.0.0.1:${port}`,
        '--data-dir',
        dir.path,
      ],
      { ASSISTANT_STARTUP_WAIT: '30' },
    );
    try {
      await app.waitFor(/listening on http/);
      expect(app.stdout).toMatch(
        /^ {2}Redis did not answer yet \(Cannot use Redis at \S+: no answer within 5000 ms; check that the server is running\); trying again for up to \d+ s$/m,
      );
    } finally {
      await app.stop();
      await dir.remove();
    }
  });
});
