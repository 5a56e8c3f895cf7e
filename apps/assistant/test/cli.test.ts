import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { PostgresStore } from '@lunation/store-postgres';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppProcess, appEnvironment, temporaryDir } from './support.js';

describe('the CLI chat (child process, demo model, SQLite file)', { timeout: 60_000 }, () => {
  let dataDir: Awaited<ReturnType<typeof temporaryDir>>;
  const processes: AppProcess[] = [];
  const start = (args: string[], env?: Record<string, string>) => {
    const app = new AppProcess(args, env);
    processes.push(app);
    return app;
  };

  beforeEach(async () => {
    dataDir = await temporaryDir();
  });

  afterEach(async () => {
    await Promise.all(processes.splice(0).map((app) => app.stop()));
    await dataDir.remove();
  });

  it('streams a reply, shows tool calls and results, asks for approval and runs the tool on "y"', async () => {
    const app = start(['--provider', 'demo', '--data-dir', dataDir.path]);
    app.send(['hello', 'y', '/exit'], { end: true });
    expect(await app.exited).toBe(0);
    const out = app.stdout;
    expect(out).toMatch(/^Model: offline demo model · Store: SQLite .*assistant\.sqlite/m);
    expect(out).toMatch(/^Thread [0-9a-f-]{36} \(new\)\. Continue it later with: pnpm start --thread /m);
    const expectedInOrder = [
      'you> hello',
      'assistant> Hello! I am the offline demo model',
      '  → calculator {"expression":"(2 + 3) * 7"}',
      '  ← calculator: expression: (2 + 3) * 7, result: 35',
      'assistant> (2 + 3) * 7 = 35.',
      '  → read_file {"path":"README.md"}',
      '  ? The assistant wants to read a file in the sandbox. read_file {"path":"README.md"}',
      '    allow? [y]es / [n]o / [a]lways: y',
      '  ← read_file: path: README.md, content: "# The assistant\'s sandbox',
      'assistant> Here is README.md:',
      "# The assistant's sandbox",
      'you> /exit',
    ];
    let position = 0;
    for (const expected of expectedInOrder) {
      const found = out.indexOf(expected, position);
      expect(found, `"${expected}" after position ${position} in:\n${out}`).toBeGreaterThanOrEqual(0);
      position = found + expected.length;
    }
    expect(app.stderr).toBe('');
  });

  it('continues a thread after a restart, asking again for an approval left open', async () => {
    const first = start(['--provider', 'demo', '--data-dir', dataDir.path]);
    first.send(['hello'], { end: true });
    expect(await first.exited).toBe(0);
    const threadId = first.stdout.match(/^Thread ([0-9a-f-]{36}) \(new\)/m)?.[1];
    expect(threadId).toBeDefined();
    expect(first.stdout).toContain('The approval stays open; answer it later with: pnpm start --thread');
    expect(first.stdout).not.toContain('← read_file');

    const second = start(['--provider', 'demo', '--data-dir', dataDir.path, '--thread', threadId as string]);
    second.send(['n', 'what is 12 * (3 + 4)', '/exit'], { end: true });
    expect(await second.exited).toBe(0);
    const out = second.stdout;
    expect(out).toContain(
      [
        `Continuing thread ${threadId} (4 messages). The last ones:`,
        '  you> hello',
        '  assistant> Hello! I am the offline demo model of the Lunation assistant. First, a tool call:',
        '  assistant> (2 + 3) * 7 = 35. Next I would like to read README.md in the sandbox, which needs your a…',
        '',
      ].join('\n'),
    );
    expect(out).toContain(
      '? The assistant wants to read a file in the sandbox. read_file {"path":"README.md"}',
    );
    expect(out).toContain('  ✗ read_file: The user declined this call.');
    expect(out).toContain('assistant> All right, I will not do that.');
    expect(out).toContain('  ← calculator: expression: 12 * (3 + 4), result: 84');
    expect(out).toContain('assistant> 12 * (3 + 4) = 84.');
  });

  it('continues at once a run killed (kill -9) mid-tool, showing the interrupted call as such', async () => {
    const first = start(['--provider', 'demo', '--data-dir', dataDir.path]);
    first.send(['run the slow task with 3 steps']);
    await first.waitFor(/… slow_task \[###-------\] 1\/3 step 1 of 3/);
    expect(await first.stop('SIGKILL')).toBeNull();
    const threadId = first.stdout.match(/^Thread ([0-9a-f-]{36}) \(new\)/m)?.[1] as string;
    expect(first.stdout).not.toContain('← slow_task');

    // Nothing typed: the cut-off call runs again as soon as the dead process's lease can be taken over.
    const second = start(['--provider', 'demo', '--data-dir', dataDir.path, '--thread', threadId]);
    await second.waitFor(/assistant> The slow task is done: All 3 steps finished\.\n+you> $/);
    second.send(['/exit'], { end: true });
    expect(await second.exited).toBe(0);
    const out = second.stdout;
    const expectedInOrder = [
      `Continuing thread ${threadId} (2 messages). The last ones:`,
      '  you> run the slow task with 3 steps',
      'The last run stopped in the middle (the app was closed or crashed); continuing it now.',
      '  ↻ slow_task {"steps":3} (interrupted; running it again)',
      '  … slow_task [###-------] 1/3 step 1 of 3',
      '  … slow_task [##########] 3/3 step 3 of 3',
      '  ← slow_task: steps: 3, message: All 3 steps finished.',
      'assistant> The slow task is done: All 3 steps finished.',
      'you> /exit',
    ];
    let position = 0;
    for (const expected of expectedInOrder) {
      const found = out.indexOf(expected, position);
      expect(found, `"${expected}" after position ${position} in:\n${out}`).toBeGreaterThanOrEqual(0);
      position = found + expected.length;
    }
    expect(out.match(/slow_task \[#/g)).toHaveLength(3);
    expect(second.stderr).toBe('');
  });

  it('leaves at /exit typed at the approval prompt, without the input ending', async () => {
    const app = start(['--provider', 'demo', '--data-dir', dataDir.path]);
    app.send(['hello']);
    await app.waitFor(/allow\? \[y\]es \/ \[n\]o \/ \[a\]lways: $/);
    app.send(['/help', '/undo', '/exit']);
    expect(await app.exited).toBe(0);
    expect(app.stdout).toContain(
      '    allow? [y]es / [n]o / [a]lways: /help\n    Commands (also at an approval prompt): /exit or Ctrl-D quits',
    );
    expect(app.stdout).toContain(
      '    allow? [y]es / [n]o / [a]lways: /undo\n    Unknown command /undo; nothing was sent to the model.',
    );
    expect(app.stdout).toMatch(
      /: \/exit\nThe approval stays open; answer it later with: pnpm start --thread [0-9a-f-]{36} --provider demo --data-dir \S+\n$/,
    );
  });

  it('answers unknown commands itself: nothing reaches the model, no thread is started', async () => {
    const app = start(['--provider', 'demo', '--data-dir', dataDir.path]);
    app.send(['/clear', '/exit'], { end: true });
    expect(await app.exited).toBe(0);
    expect(app.stdout).toContain(
      'you> /clear\nUnknown command /clear; nothing was sent to the model. Commands',
    );
    expect(app.stdout).not.toContain('assistant>');
    const threadId = app.stdout.match(/^Thread ([0-9a-f-]{36}) \(new\)/m)?.[1] as string;

    const again = start(['--provider', 'demo', '--data-dir', dataDir.path, '--thread', threadId]);
    expect(await again.exited).toBe(2);
    expect(again.stderr).toContain(`error: There is no thread "${threadId}"`);
  });

  it('refuses an unknown --thread id unless --create is given', async () => {
    const typo = start(['--provider', 'demo', '--data-dir', dataDir.path, '--thread', 'my-thraed']);
    typo.send(['hello'], { end: true });
    expect(await typo.exited).toBe(2);
    expect(typo.stderr).toBe(
      'error: There is no thread "my-thraed" in the sqlite store; check the id, or add --create to start a new thread with it\n',
    );
    expect(typo.stdout).toBe('');

    const created = start([
      '--provider',
      'demo',
      '--data-dir',
      dataDir.path,
      '--thread',
      'my-thread',
      '--create',
    ]);
    created.send(['what is 2 * 21', '/exit'], { end: true });
    expect(await created.exited).toBe(0);
    expect(created.stdout).toContain('Thread my-thread (new).');
    expect(created.stdout).toContain('assistant> 2 * 21 = 42.');

    const continued = start(['--provider', 'demo', '--data-dir', dataDir.path, '--thread', 'my-thread']);
    continued.send(['/exit'], { end: true });
    expect(await continued.exited).toBe(0);
    expect(continued.stdout).toContain(
      'Continuing thread my-thread (4 messages). The last ones:\n  you> what is 2 * 21\n',
    );
  });

  it("exits non-zero under pnpm start for a typo'd --thread, with its own one-line error", async () => {
    const root = fileURLToPath(new URL('../../..', import.meta.url));
    const child = spawn('pnpm', ['start', '--thread', 'my-thraed', '--data-dir', dataDir.path], {
      cwd: root,
      env: appEnvironment(),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(stderr).toBe(
      'error: There is no thread "my-thraed" in the sqlite store; check the id, or add --create to start a new thread with it\n',
    );
    expect(code).toBe(2);
    // pnpm adds one line of its own, nothing more (no stack, no second report).
    expect(stdout).not.toMatch(/\n\s+at |ERR_PNPM|Exit status/);
  });

  it('prints the help and exits 0', async () => {
    const app = start(['--help']);
    expect(await app.exited).toBe(0);
    expect(app.stdout).toContain('Usage:');
    expect(app.stdout).toContain('--provider openai|anthropic|demo');
  });

  it.each([
    { name: 'an unknown flag', args: ['--colour'], message: 'error: Unknown flag "--colour" (see --help)' },
    {
      name: 'a bad store',
      args: ['--store', 'mongo'],
      message: 'error: --store must be one of sqlite, memory, redis, postgres, got "mongo" (see --help)',
    },
    {
      name: '--provider openai without a key',
      args: ['--provider', 'openai'],
      message:
        'error: --provider openai needs OPENAI_API_KEY in the environment (or use --provider demo for the offline model)',
    },
    {
      name: 'serving on a public address without a token',
      args: ['serve', '--host', '0.0.0.0'],
      message:
        'error: Refusing to serve on 0.0.0.0 without authentication; pass --token <token> or set ASSISTANT_TOKENS (see --help)',
    },
  ])('exits 2 with a one-line message for $name', async ({ args, message }) => {
    const app = start([...args, '--data-dir', dataDir.path]);
    expect(await app.exited).toBe(2);
    expect(app.stderr).toBe(`${message}\n`);
    expect(app.stdout).toBe('');
  });

  it('exits 2 with a one-line message when Redis cannot be reached', async () => {
    const port = await closedPort();
    const app = start([
      '--store',
      'redis',
      '--redis-url',
      `redis://127.0.0.1:${port}`,
      '--data-dir',
      dataDir.path,
    ]);
    expect(await app.exited).toBe(2);
    expect(app.stderr.split('\n')).toHaveLength(2);
    expect(app.stderr).toMatch(/^error: .*Redis/);
    expect(app.stderr).not.toMatch(/\n\s+at /);
  });

  it('exits 2 with a one-line message, without the password, when PostgreSQL cannot be reached', async () => {
    const port = await closedPort();
    const app = start([
      '--store',
      'postgres',
      '--postgres-url',
      `postgres://app:secret@127.0.0.1:${port}/app`,
      '--data-dir',
      dataDir.path,
    ]);
    expect(await app.exited).toBe(2);
    expect(app.stderr.split('\n')).toHaveLength(2);
    expect(app.stderr).toMatch(
      /^error: Cannot use PostgreSQL at postgres:\/\/app:\*\*\*@127\.0\.0\.1:\d+\/app: /,
    );
    expect(app.stderr).not.toContain('secret');
  });

  it('keeps the conversation in PostgreSQL across a restart with --store postgres', async () => {
    const postgresUrl = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    // A fresh schema, dropped at the end.
    const schema = `lunation_test_${randomBytes(6).toString('hex')}`;
    const flags = ['--provider', 'demo', '--store', 'postgres', '--postgres-schema', schema];
    flags.push('--data-dir', dataDir.path);
    const first = start(flags, { DATABASE_URL: postgresUrl });
    first.send(['hello'], { end: true });
    expect(await first.exited).toBe(0);
    expect(first.stderr).toBe('');
    expect(first.stdout).toMatch(/^Model: offline demo model · Store: PostgreSQL postgres:\/\//m);
    const hint = first.stdout.match(
      /^Thread ([0-9a-f-]{36}) \(new\)\. Continue it later with: pnpm start (.*)$/m,
    );
    const threadId = hint?.[1];
    expect(threadId).toBeDefined();
    // The hint names the store: following it reaches the same thread (DATABASE_URL stays in the environment).
    expect(hint?.[2]).toBe(
      `--thread ${threadId} --provider demo --store postgres --postgres-schema ${schema} --data-dir ${dataDir.path}`,
    );
    expect(first.stdout).toContain(
      `The approval stays open; answer it later with: pnpm start --thread ${threadId} --provider demo --store postgres --postgres-schema ${schema} --data-dir ${dataDir.path}`,
    );
    const store = new PostgresStore({ connectionString: postgresUrl, schema });
    try {
      const before = await store.listMessages(threadId!);
      expect(before[0]?.message).toMatchObject({ role: 'user', content: [{ type: 'text', text: 'hello' }] });
      const second = start(hint![2]!.split(' '), { DATABASE_URL: postgresUrl });
      second.send(['n', '/exit'], { end: true });
      expect(await second.exited).toBe(0);
      expect(second.stdout).toContain(`Continuing thread ${threadId} (${before.length} messages).`);
      expect((await store.listMessages(threadId!)).length).toBeGreaterThan(before.length);
    } finally {
      await store.dropSchema();
    }
  });
});

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
