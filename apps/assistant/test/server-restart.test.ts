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

describe('the HTTP server as a child process on a SQLite file', { timeout: 90_000 }, () => {
  let dataDir: Awaited<ReturnType<typeof temporaryDir>>;
  const processes: AppProcess[] = [];

  /** Starts `serve` on a free port and resolves with its base URL. */
  async function serve(): Promise<{ app: AppProcess; url: string }> {
    const app = new AppProcess(['serve', '--port', '0', '--provider', 'demo', '--data-dir', dataDir.path]);
    processes.push(app);
    const [, url] = await app.waitFor(/listening on (http:\/\/\S+)/);
    return { app, url: url as string };
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
  });

  afterEach(async () => {
    await Promise.all(processes.splice(0).map((app) => app.stop()));
    await dataDir.remove();
  });

  it('resumes a run suspended for approval after the server was killed and restarted', async () => {
    const before = await serve();
    const threadId = ((await (await post(`${before.url}/threads`)).json()) as { thread: { id: string } })
      .thread.id;
    const suspended = runEnd(
      await collectEventStream(await post(`${before.url}/threads/${threadId}/messages`, { text: 'hello' })),
    );
    expect(suspended.status).toBe('waiting');
    const ticket = suspended.openTickets[0];
    expect(ticket?.toolName).toBe('read_file');

    before.app.child.kill('SIGKILL');
    expect(await before.app.exited).toBeNull();

    const after = await serve();
    const status = (await (await fetch(`${after.url}/threads/${threadId}`)).json()) as {
      latestRun: { status: string; openTickets: Array<{ id: string }> };
    };
    expect(status.latestRun.status).toBe('waiting');
    expect(status.latestRun.openTickets.map((open) => open.id)).toEqual([ticket?.id]);

    const events = await collectEventStream(
      await post(`${after.url}/threads/${threadId}/decisions`, {
        decisions: [{ ticketId: ticket?.id, action: 'resume' }],
      }),
    );
    expect(events.map((event) => event.event).filter((type) => type.startsWith('tool-'))).toEqual([
      'tool-call-resumed',
      'tool-execution-start',
      'tool-result',
    ]);
    const done = runEnd(events);
    expect(done).toMatchObject({
      status: 'done',
      termination: { type: 'natural-end' },
      identity: { runId: suspended.identity.runId },
    });
    expect(done.finalText).toContain("Here is README.md:\n\n# The assistant's sandbox");

    const history = (await (await fetch(`${after.url}/threads/${threadId}/messages`)).json()) as {
      messages: Array<{ message: { role: string } }>;
    };
    expect(history.messages.map((record) => record.message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);

    after.app.child.kill('SIGTERM');
    expect(await after.app.exited).toBe(0);
  });

  it('continues a run cut off mid-tool as soon as the restarted server can take the thread, without a new request', async () => {
    const first = await serve();
    const threadId = ((await (await post(`${first.url}/threads`)).json()) as { thread: { id: string } })
      .thread.id;
    const stream = readEventStream(
      await post(`${first.url}/threads/${threadId}/messages`, { text: 'run the slow task with 2 steps' }),
    );
    const seen: ServerSentEvent[] = [];
    await readUntil(stream, 'tool-progress', seen);
    const runId = (
      (await (await fetch(`${first.url}/threads/${threadId}`)).json()) as { latestRun: { runId: string } }
    ).latestRun.runId;
    first.app.child.kill('SIGKILL');
    expect(await first.app.exited).toBeNull();
    const killedAt = Date.now();

    // The dead server's lease has up to 6 s left; the restarted one (same data folder, same owner) takes it over
    // once it went 3 s without a renewal, and continues the run on its own: nobody sends anything.
    const second = await serve();
    let latest: { status: string; runId: string; termination: { type: string } | null } | undefined;
    while (Date.now() - killedAt < 20_000) {
      latest = (
        (await (await fetch(`${second.url}/threads/${threadId}`)).json()) as { latestRun: typeof latest }
      ).latestRun;
      if (latest?.status === 'done') break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(latest).toMatchObject({
      status: 'done',
      runId,
      termination: { type: 'natural-end' },
    });
    expect(Date.now() - killedAt).toBeLessThan(15_000);
    expect(second.app.stdout).toContain('Continued 1 run(s) cut off by a previous stop.');

    // The continued run's events stream from the restarted server (its log starts with the continuation).
    const events = await collectEventStream(
      await fetch(`${second.url}/threads/${threadId}/runs/${runId}/events`),
    );
    expect(events[0]?.data).toMatchObject({ type: 'run-start', resumed: true });
    const starts = events.filter((event) => event.event === 'tool-execution-start');
    expect(starts.map((event) => event.data)).toEqual([
      expect.objectContaining({ toolName: 'slow_task', rerun: true }),
    ]);
    const types = events.map((event) => event.event);
    expect(types.indexOf('tool-execution-start')).toBeLessThan(types.indexOf('tool-result'));
    expect(types.indexOf('tool-result')).toBeLessThan(types.indexOf('step-start'));
    expect(events.find((event) => event.event === 'tool-result')?.data).toMatchObject({
      toolName: 'slow_task',
      result: { status: 'success', data: { steps: 2 } },
    });
    expect(runEnd(events)).toMatchObject({ status: 'done', termination: { type: 'natural-end' } });

    // The run's timeline, from the store alone, shows the crash: the first process's step, the takeover by the
    // restarted one (a new lease token and instance), and the slow task re-run once under its same key.
    const timeline = (await (
      await fetch(`${second.url}/threads/${threadId}/runs/${runId}/timeline`)
    ).json()) as {
      entries: Array<{ kind: string; [field: string]: unknown }>;
      workers: Array<{ owner: string; incarnation: string }>;
    };
    const kinds = timeline.entries.map((entry) => entry.kind);
    expect(kinds).toContain('recovered');
    const takeover = timeline.entries.find((entry) => entry.kind === 'lease-takeover') as
      | { fromToken: number; toToken: number; from: { incarnation: string }; to: { incarnation: string } }
      | undefined;
    expect(takeover).toBeDefined();
    expect(takeover!.toToken).toBeGreaterThan(takeover!.fromToken);
    expect(takeover!.to.incarnation).not.toBe(takeover!.from.incarnation);
    expect(
      timeline.entries.filter((entry) => entry.kind === 'tool' && entry.toolName === 'slow_task'),
    ).toEqual([expect.objectContaining({ attempts: 2, rerun: true, status: 'completed' })]);
    expect(timeline.workers).toHaveLength(2);
    expect(kinds.indexOf('step')).toBeLessThan(kinds.indexOf('lease-takeover'));
    const history = (await (await fetch(`${second.url}/threads/${threadId}/messages`)).json()) as {
      messages: Array<{ message: { role: string } }>;
    };
    expect(history.messages.map((record) => record.message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);

    // A new message afterwards starts a fresh run.
    const next = runEnd(
      await collectEventStream(
        await post(`${second.url}/threads/${threadId}/messages`, { text: 'hello again' }),
      ),
    );
    expect(next.identity.runId).not.toBe(runId);
  });

  it('on SIGTERM cancels the active run, ends its stream, checkpoints it and exits 0', async () => {
    const first = await serve();
    const threadId = ((await (await post(`${first.url}/threads`)).json()) as { thread: { id: string } })
      .thread.id;
    const response = await post(`${first.url}/threads/${threadId}/messages`, {
      text: 'run the slow task with 20 steps',
    });
    const stream = readEventStream(response);
    const events: ServerSentEvent[] = [];
    await readUntil(stream, 'tool-progress', events);

    first.app.child.kill('SIGTERM');
    await readUntil(stream, 'run-end', events);
    expect(runEnd(events)).toMatchObject({
      status: 'done',
      termination: { type: 'cancelled', reason: 'the server is shutting down' },
    });
    expect(await first.app.exited).toBe(0);
    expect(first.app.stdout).toContain('SIGTERM: finishing active runs and shutting down');

    const second = await serve();
    const status = (await (await fetch(`${second.url}/threads/${threadId}`)).json()) as {
      latestRun: { status: string; termination: { type: string } };
    };
    expect(status.latestRun).toMatchObject({ status: 'done', termination: { type: 'cancelled' } });
  });
});
