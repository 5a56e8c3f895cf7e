import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { PostgresStore } from '@lunation/store-postgres';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppProcess, temporaryDir } from './support.js';

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
    expect(first.stdout).toContain('The approval stays open; answer it later with --thread');
    expect(first.stdout).not.toContain('← read_file');

    const second = start(['--provider', 'demo', '--data-dir', dataDir.path, '--thread', threadId as string]);
    second.send(['n', 'what is 12 * (3 + 4)', '/exit'], { end: true });
    expect(await second.exited).toBe(0);
    const out = second.stdout;
    expect(out).toContain(`Continuing thread ${threadId} (4 messages).`);
    expect(out).toContain(
      '? The assistant wants to read a file in the sandbox. read_file {"path":"README.md"}',
    );
    expect(out).toContain('  ✗ read_file: The user declined this call.');
    expect(out).toContain('assistant> All right, I will not do that.');
    expect(out).toContain('  ← calculator: expression: 12 * (3 + 4), result: 84');
    expect(out).toContain('assistant> 12 * (3 + 4) = 84.');
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
    const threadId = first.stdout.match(/^Thread ([0-9a-f-]{36}) \(new\)/m)?.[1];
    expect(threadId).toBeDefined();
    const store = new PostgresStore({ connectionString: postgresUrl, schema });
    try {
      const before = await store.listMessages(threadId!);
      expect(before[0]?.message).toMatchObject({ role: 'user', content: [{ type: 'text', text: 'hello' }] });
      const second = start([...flags, '--postgres-url', postgresUrl, '--thread', threadId!]);
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
