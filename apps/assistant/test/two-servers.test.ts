import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { PostgresStore } from '@lunation/store-postgres';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AppProcess,
  collectEventStream,
  readEventStream,
  readUntil,
  runEnd,
  type ServerSentEvent,
  temporaryDir,
} from './support.js';

const postgresUrl = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

// Two `serve` processes behind one load balancer: same host, same data folder (so the same lease owner), one
// PostgreSQL database. A thread running on one must be busy on the other, and its tool must run once.
describe('two sample servers sharing an owner and a PostgreSQL database', { timeout: 90_000 }, () => {
  let dataDir: Awaited<ReturnType<typeof temporaryDir>>;
  let schema: string;
  const processes: AppProcess[] = [];

  async function serve(): Promise<string> {
    const app = new AppProcess(
      [
        'serve',
        '--port',
        '0',
        '--provider',
        'demo',
        '--store',
        'postgres',
        '--postgres-schema',
        schema,
        '--data-dir',
        dataDir.path,
      ],
      { DATABASE_URL: postgresUrl },
    );
    processes.push(app);
    const [, url] = await app.waitFor(/listening on (http:\/\/\S+)/);
    return url as string;
  }

  const post = (url: string, body?: unknown) =>
    fetch(url, {
      method: 'POST',
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });

  beforeEach(async () => {
    dataDir = await temporaryDir();
    schema = `lunation_two_servers_${randomBytes(6).toString('hex')}`;
  });

  afterEach(async () => {
    await Promise.all(processes.splice(0).map((app) => app.stop()));
    const store = new PostgresStore({ connectionString: postgresUrl, schema });
    await store.dropSchema().finally(() => store.close());
    await dataDir.remove();
  });

  it('answers 409 thread-busy on the second server while the first runs the thread, and the tool runs once', async () => {
    const [first, second] = await Promise.all([serve(), serve()]);
    const threadId = ((await (await post(`${first}/threads`)).json()) as { thread: { id: string } }).thread
      .id;
    const running = readEventStream(
      await post(`${first}/threads/${threadId}/messages`, { text: 'run the slow task with 6 steps' }),
    );
    const firstEvents: ServerSentEvent[] = [];
    await readUntil(running, 'tool-progress', firstEvents);

    const busy = await post(`${second}/threads/${threadId}/messages`, {
      text: 'run the slow task with 3 steps',
    });
    expect(busy.status).toBe(409);
    const retryAfter = Number(busy.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    const { error } = (await busy.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe('thread-busy');
    expect(error.message).toMatch(
      new RegExp(
        `^Thread "${threadId}" has an active run \\(run [^)]+\\) in another server process; retry in \\d+ s$`,
      ),
    );
    // The client learns when to retry, not the servers' host name or data folder.
    expect(error.message).not.toContain(hostname());
    expect(error.message).not.toContain(dataDir.path);

    for await (const event of running) firstEvents.push(event);
    expect(runEnd(firstEvents)).toMatchObject({ status: 'done', termination: { type: 'natural-end' } });
    const executions = firstEvents.filter((event) => event.event === 'tool-execution-start');
    expect(executions.map((event) => event.data)).toEqual([
      expect.objectContaining({ toolName: 'slow_task', rerun: false }),
    ]);
    expect(firstEvents.find((event) => event.event === 'tool-result')?.data).toMatchObject({
      result: { status: 'success', data: { steps: 6 } },
    });
    const store = new PostgresStore({ connectionString: postgresUrl, schema });
    try {
      const ledger = await store.listToolExecutions(runEnd(firstEvents).identity.runId);
      expect(ledger.map((entry) => [entry.toolName, entry.status, entry.attempts])).toEqual([
        ['slow_task', 'completed', 1],
      ]);
    } finally {
      await store.close();
    }

    // Once the first server's run ended, the second one runs the thread.
    const after = await post(`${second}/threads/${threadId}/messages`, { text: 'what is 6 * 7' });
    expect(after.status).toBe(200);
    expect(runEnd(await collectEventStream(after))).toMatchObject({
      status: 'done',
      termination: { type: 'natural-end' },
    });
  });
});
