import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { PostgresDispatcher } from '@lunation/dispatch-postgres';
import { PostgresStore } from '@lunation/store-postgres';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseCommandLine } from '../src/command-line.js';
import { storeNamespace } from '../src/open-dispatcher.js';
import { AppProcess, temporaryDir } from './support.js';

const postgresUrl = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The MCP reference server (`@modelcontextprotocol/server-everything`), run over stdio by a worker. */
const everythingServer = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist',
  'index.js',
);

/** A Server-Sent Event with its id (absent on the `run-submitted` event). */
interface IdentifiedEvent {
  id: string | undefined;
  event: string;
  data: Record<string, unknown>;
}

/** Reads an SSE response event by event, keeping ids. */
async function* events(response: Response): AsyncGenerator<IdentifiedEvent> {
  if (!response.body) throw new Error('no body');
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      let id: string | undefined;
      let event = 'message';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('id: ')) id = line.slice(4);
        else if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      if (data) yield { id, event, data: JSON.parse(data) as Record<string, unknown> };
    }
  }
}

/** Reads until (and including) an event of `type`, or the end; `stop` ends the read early (a dropped client). */
async function readUntil(
  stream: AsyncGenerator<IdentifiedEvent>,
  into: IdentifiedEvent[],
  stop: (event: IdentifiedEvent) => boolean,
): Promise<void> {
  for (;;) {
    const next = await stream.next();
    if (next.done) return;
    into.push(next.value);
    if (stop(next.value)) return;
  }
}

/** The JSON lines a worker printed about what it runs. */
function workerLog(app: AppProcess): Array<Record<string, unknown>> {
  return app.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe.each(['redis', 'postgres'])(
  'the sample app as a fleet on --dispatch %s: servers submit and stream, workers run',
  { timeout: 120_000 },
  (dispatch) => {
    let dataDir: Awaited<ReturnType<typeof temporaryDir>>;
    let schema: string;
    const processes: AppProcess[] = [];
    const flags = () => [
      '--provider',
      'demo',
      '--store',
      'postgres',
      '--postgres-schema',
      schema,
      '--data-dir',
      dataDir.path,
      '--dispatch',
      dispatch,
    ];

    async function serve(): Promise<string> {
      const app = new AppProcess(['serve', '--port', '0', ...flags()], { DATABASE_URL: postgresUrl });
      processes.push(app);
      const [, url] = await app.waitFor(/listening on (http:\/\/\S+)/);
      return url as string;
    }

    async function worker(extra: string[] = []): Promise<AppProcess> {
      const app = new AppProcess(['worker', '--concurrency', '2', ...flags(), ...extra], {
        DATABASE_URL: postgresUrl,
      });
      processes.push(app);
      await app.waitFor(/worker \S+ ready/);
      return app;
    }

    const post = (url: string, body?: unknown, signal?: AbortSignal) =>
      fetch(url, {
        method: 'POST',
        ...(signal ? { signal } : {}),
        ...(body === undefined
          ? {}
          : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
      });

    beforeEach(async () => {
      dataDir = await temporaryDir();
      schema = `lunation_fleet_app_${randomBytes(6).toString('hex')}`;
    });

    afterEach(async () => {
      await Promise.all(processes.splice(0).map((app) => app.stop()));
      const store = new PostgresStore({ connectionString: postgresUrl, schema });
      await store.dropSchema().finally(() => store.close());
      if (dispatch === 'postgres') {
        const command = parseCommandLine(['serve', ...flags()], { DATABASE_URL: postgresUrl });
        if (command.type !== 'serve') throw new Error('expected a serve command');
        const opened = await PostgresDispatcher.open({
          connectionString: postgresUrl,
          schema: `lunation_dispatch_${storeNamespace(command.settings)}`,
        });
        await opened.dropSchema().finally(() => opened.close());
      }
      await dataDir.remove();
    });

    it('resumes a dropped stream on another server with Last-Event-ID, through a worker killed mid-tool', async () => {
      const [first, second] = await Promise.all([serve(), serve()]);
      let running = await worker(['--metrics-port', String(await freePort())]);
      const threadId = ((await (await post(`${first}/threads`)).json()) as { thread: { id: string } }).thread
        .id;

      const dropped = new AbortController();
      const seen: IdentifiedEvent[] = [];
      const stream = events(
        await post(
          `${first}/threads/${threadId}/messages`,
          { text: 'run the slow task with 4 steps' },
          dropped.signal,
        ),
      );
      await readUntil(stream, seen, (event) => event.event === 'tool-progress');
      expect(seen[0]).toMatchObject({ id: undefined, event: 'run-submitted' });
      const runId = String(seen[0]?.data.runId);

      // The worker dies mid-tool; another one starts. The client drops its stream meanwhile and comes back on
      // the other server after the last id it got.
      // Its log said which worker runs the run: kill that one.
      const started = workerLog(running).find((entry) => entry.event === 'run-started');
      expect(started).toMatchObject({ level: 'info', how: 'started', runId, threadId, attempt: 1 });
      // pino's lines name the process: the one to kill.
      expect(started?.pid).toBe(running.child.pid);
      const killed = started as Record<string, unknown>;
      running.child.kill('SIGKILL');
      await running.exited;
      dropped.abort();
      const metricsPort = await freePort();
      running = await worker(['--metrics-port', String(metricsPort)]);
      const lastId = seen.at(-1)?.id as string;
      const resumed = await fetch(`${second}/threads/${threadId}/runs/${runId}/events`, {
        headers: { 'last-event-id': lastId },
      });
      expect(resumed.status).toBe(200);
      await readUntil(events(resumed), seen, (event) => event.event === 'run-end');
      expect(seen.at(-1)).toMatchObject({ event: 'run-end', data: { status: 'done' } });

      // Every event once, in order: what the client pieced together is the whole log.
      const ids = seen.slice(1).map((event) => Number(event.id));
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(new Set(ids).size).toBe(ids.length);
      const whole: IdentifiedEvent[] = [];
      await readUntil(
        events(await fetch(`${first}/threads/${threadId}/runs/${runId}/events`)),
        whole,
        (event) => event.event === 'run-end' && event.data.status === 'done',
      );
      expect(whole.map((event) => event.id)).toEqual(seen.slice(1).map((event) => event.id));
      const starts = whole.filter((event) => event.event === 'tool-execution-start');
      expect(starts.map((event) => event.data.rerun)).toEqual([false, true]);

      // The run's timeline (from the store, on either server) shows both workers and the takeover.
      const timeline = (await (
        await fetch(`${second}/threads/${threadId}/runs/${runId}/timeline`)
      ).json()) as {
        entries: Array<{ kind: string; [field: string]: unknown }>;
        workers: unknown[];
      };
      expect(timeline.workers).toHaveLength(2);
      // The workers' JSON lines name the run and its lease as the timeline does: the killed worker and the one
      // that recovered the run.
      const recovered = workerLog(running).find((entry) => entry.event === 'run-started');
      expect(recovered).toMatchObject({ how: 'recovered', runId, threadId });
      expect(recovered?.incarnation).not.toBe(killed.incarnation);
      expect(timeline.workers).toEqual([
        { owner: killed.owner, incarnation: killed.incarnation },
        { owner: recovered?.owner, incarnation: recovered?.incarnation },
      ]);
      const takeover = timeline.entries.find((entry) => entry.kind === 'lease-takeover');
      expect(takeover).toMatchObject({ fromToken: killed.leaseToken, toToken: recovered?.leaseToken });
      // One line each for the takeover, the tool's re-run and the run's end, from the new worker's process, with
      // the lease and incarnation the timeline shows.
      const identity = {
        pid: running.child.pid,
        threadId,
        runId,
        leaseToken: takeover?.toToken,
        owner: recovered?.owner,
        incarnation: recovered?.incarnation,
      };
      const lines = workerLog(running);
      expect(lines.filter((entry) => entry.event === 'run-takeover')).toEqual([
        expect.objectContaining({ level: 'warn', ...identity }),
      ]);
      expect(lines.filter((entry) => entry.event === 'tool-rerun')).toEqual([
        expect.objectContaining({ level: 'warn', toolName: 'slow_task', attempt: 2, ...identity }),
      ]);
      const ended = lines.find((entry) => entry.event === 'run-ended');
      expect(ended).toMatchObject({
        runId,
        status: 'done',
        termination: 'natural-end',
        pid: running.child.pid,
      });

      // The new worker's metrics count the takeover and the re-run; a server's show the queue.
      const probe = `http://127.0.0.1:${metricsPort}`;
      expect(await (await fetch(`${probe}/healthz`)).json()).toEqual({ status: 'ok' });
      expect(await (await fetch(`${probe}/readyz`)).json()).toEqual({
        status: 'ready',
        checks: { store: 'ok', dispatcher: 'ok' },
      });
      const workerMetrics = await (await fetch(`${probe}/metrics`)).text();
      expect(workerMetrics).toMatch(
        /^lunation_lease_takeovers_total\{gen_ai_agent_id="assistant",[^}]*\} 1$/m,
      );
      expect(workerMetrics).toMatch(/^lunation_tool_reruns_total\{gen_ai_tool_name="slow_task",[^}]*\} 1$/m);
      const serverMetrics = await (await fetch(`${first}/metrics`)).text();
      expect(serverMetrics).toMatch(/^lunation_dispatch_pending\{[^}]*\} 0$/m);
      expect(serverMetrics).toMatch(
        /^lunation_dispatch_threads\{lunation_dispatch_state="dead_lettered",[^}]*\} 0$/m,
      );
      const kinds = timeline.entries.map((entry) => entry.kind);
      expect(kinds).toEqual(expect.arrayContaining(['step', 'recovered', 'lease-takeover', 'run-ended']));
      expect(
        timeline.entries.find((entry) => entry.kind === 'tool' && entry.toolName === 'slow_task'),
      ).toMatchObject({
        attempts: 2,
        rerun: true,
      });
    });

    it("runs an MCP server's tool on a worker started with --mcp", async () => {
      const config = join(dataDir.path, 'mcp.json');
      await writeFile(
        config,
        JSON.stringify({
          servers: [
            {
              name: 'everything',
              transport: 'stdio',
              command: process.execPath,
              args: [everythingServer, 'stdio'],
              tools: { include: ['echo'] },
            },
          ],
        }),
      );
      const url = await serve();
      await worker(['--mcp', config]);
      const threadId = ((await (await post(`${url}/threads`)).json()) as { thread: { id: string } }).thread
        .id;
      const seen: IdentifiedEvent[] = [];
      await readUntil(
        events(
          await post(`${url}/threads/${threadId}/messages`, {
            text: 'call everything__echo {"message": "from a fleet worker"}',
          }),
        ),
        seen,
        (event) => event.event === 'run-end',
      );
      expect(seen.at(-1)).toMatchObject({ event: 'run-end', data: { status: 'done' } });
      const results = seen.filter((event) => event.event === 'tool-result');
      expect(results.map((event) => event.data.toolName)).toEqual(['everything__echo']);
      expect(JSON.stringify(results[0]?.data)).toContain('Echo: from a fleet worker');
      const text = seen
        .filter((event) => event.event === 'text-delta')
        .map((event) => String(event.data.delta))
        .join('');
      expect(text).toContain('Echo: from a fleet worker');
    });

    it('takes an approval through the other server, and a cancel from any server reaches the worker', async () => {
      const [first, second] = await Promise.all([serve(), serve()]);
      await worker();
      const threadId = ((await (await post(`${first}/threads`)).json()) as { thread: { id: string } }).thread
        .id;

      const asked: IdentifiedEvent[] = [];
      await readUntil(
        events(await post(`${first}/threads/${threadId}/messages`, { text: 'read README.md' })),
        asked,
        (event) => event.event === 'run-end',
      );
      const end = asked.at(-1)?.data as { status: string; openTickets: Array<{ id: string }> };
      expect(end.status).toBe('waiting');
      const unknown = await post(`${second}/threads/${threadId}/decisions`, {
        decisions: [{ ticketId: 'nope', action: 'resume' }],
      });
      expect(unknown.status).toBe(400);
      expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('unknown-ticket');
      const resumed: IdentifiedEvent[] = [];
      await readUntil(
        events(
          await post(`${second}/threads/${threadId}/decisions`, {
            decisions: [{ ticketId: end.openTickets[0]?.id, action: 'resume' }],
          }),
        ),
        resumed,
        (event) => event.event === 'run-end',
      );
      expect(Number(resumed[0]?.id)).toBeGreaterThan(Number(asked.at(-1)?.id));
      expect(resumed.at(-1)).toMatchObject({ event: 'run-end', data: { status: 'done' } });

      const slow: IdentifiedEvent[] = [];
      const stream = events(
        await post(`${first}/threads/${threadId}/messages`, { text: 'run the slow task with 20 steps' }),
      );
      await readUntil(stream, slow, (event) => event.event === 'tool-progress');
      // A useChat client on the other server resumes the active run's UI message stream.
      const chat = await fetch(`${second}/chat/${threadId}/stream`);
      expect(chat.status).toBe(200);
      expect(chat.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
      const reader = chat.body?.getReader();
      expect(new TextDecoder().decode((await reader?.read())?.value)).toContain('"type":"start"');
      await reader?.cancel();
      const cancel = await post(`${second}/threads/${threadId}/cancel`);
      expect(cancel.status).toBe(202);
      await readUntil(stream, slow, (event) => event.event === 'run-end');
      expect(slow.at(-1)).toMatchObject({ event: 'run-end', data: { termination: { type: 'cancelled' } } });
    });
  },
);
