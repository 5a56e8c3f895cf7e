import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Command, DEFAULT_DATA_DIR, parseCommandLine } from './command-line.js';

const parse = (args: string[], env: Record<string, string> = {}) => parseCommandLine(args, env, '/home/me');

function refusal(args: string[], env: Record<string, string> = {}): string {
  try {
    parse(args, env);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`${args.join(' ')} was accepted`);
}

describe('parseCommandLine', () => {
  it('defaults to a chat on SQLite in apps/assistant/data, with the provider chosen from the keys', () => {
    expect(DEFAULT_DATA_DIR).toMatch(/apps[/\\]assistant[/\\]data[/\\]?$/);
    expect(parse([])).toEqual({
      type: 'chat',
      threadId: undefined,
      create: false,
      continueFlags: [],
      settings: {
        store: 'sqlite',
        sqlitePath: join(DEFAULT_DATA_DIR, 'assistant.sqlite'),
        redisUrl: 'redis://127.0.0.1:6379',
        postgresUrl: undefined,
        postgresSchema: 'lunation_assistant',
        provider: undefined,
        model: undefined,
        dataDir: DEFAULT_DATA_DIR,
        sandbox: join(DEFAULT_DATA_DIR, 'sandbox'),
        dispatch: undefined,
        mcpConfig: undefined,
        trace: undefined,
        startupWaitMs: 30_000,
      },
    } satisfies Command);
  });

  it('reads the start-up wait from --startup-wait or ASSISTANT_STARTUP_WAIT (seconds), the flag first', () => {
    expect(parse(['serve', '--startup-wait', '90'])).toMatchObject({ settings: { startupWaitMs: 90_000 } });
    expect(parse(['worker', '--dispatch', 'redis'], { ASSISTANT_STARTUP_WAIT: '2.5' })).toMatchObject({
      settings: { startupWaitMs: 2_500 },
    });
    expect(parse(['--startup-wait', '0'], { ASSISTANT_STARTUP_WAIT: '60' })).toMatchObject({
      settings: { startupWaitMs: 0 },
    });
    expect(refusal(['--startup-wait', 'soon'])).toBe(
      '--startup-wait must be a number of seconds from 0 to 3600, got "soon" (see --help)',
    );
    expect(refusal([], { ASSISTANT_STARTUP_WAIT: '-1' })).toBe(
      'ASSISTANT_STARTUP_WAIT must be a number of seconds from 0 to 3600, got "-1" (see --help)',
    );
  });

  it('reads --metrics-port for a worker only', () => {
    expect(parse(['worker', '--dispatch', 'redis', '--metrics-port', '9464'])).toMatchObject({
      type: 'worker',
      metricsPort: 9464,
    });
    expect(parse(['worker', '--dispatch', 'redis'])).toMatchObject({ metricsPort: undefined });
    expect(refusal(['serve', '--metrics-port', '9464'])).toBe(
      '--metrics-port only applies to the worker command (see --help)',
    );
  });

  it('reads --trace console|otlp for every command, and refuses another value', () => {
    expect(parse(['--trace', 'console'])).toMatchObject({ type: 'chat', settings: { trace: 'console' } });
    expect(parse(['serve', '--trace', 'otlp'])).toMatchObject({ type: 'serve', settings: { trace: 'otlp' } });
    expect(parse(['worker', '--dispatch', 'redis', '--trace', 'otlp'])).toMatchObject({
      type: 'worker',
      settings: { trace: 'otlp' },
    });
    expect(refusal(['--trace', 'jaeger'])).toBe(
      '--trace must be one of console, otlp, got "jaeger" (see --help)',
    );
  });

  it('reads the fleet commands: serve --dispatch and worker', () => {
    expect(parse(['serve', '--dispatch', 'redis', '--store', 'redis'])).toMatchObject({
      type: 'serve',
      settings: { dispatch: 'redis', store: 'redis' },
    });
    expect(parse(['worker', '--dispatch', 'redis', '--concurrency', '8'])).toMatchObject({
      type: 'worker',
      concurrency: 8,
      settings: { dispatch: 'redis', store: 'sqlite' },
    });
    expect(parse(['worker', '--dispatch', 'redis', '--redis-url', 'redis://queue:6380'])).toMatchObject({
      type: 'worker',
      concurrency: 4,
      settings: { redisUrl: 'redis://queue:6380' },
    });
  });

  it('reads the flags, resolving relative paths from the folder the command was run in', () => {
    const command = parse([
      '--',
      '--',
      'chat',
      '--thread',
      't1',
      '--create',
      '--provider',
      'anthropic',
      '--model',
      'claude-x',
      '--data-dir',
      'state',
      '--sandbox',
      '/srv/docs',
    ]);
    expect(command).toMatchObject({
      type: 'chat',
      threadId: 't1',
      create: true,
      settings: {
        provider: 'anthropic',
        model: 'claude-x',
        dataDir: '/home/me/state',
        sqlitePath: '/home/me/state/assistant.sqlite',
        sandbox: '/srv/docs',
      },
      continueFlags: [
        '--provider',
        'anthropic',
        '--model',
        'claude-x',
        '--data-dir',
        '/home/me/state',
        '--sandbox',
        '/srv/docs',
      ],
    });
  });

  it('gives the flags that reach the same store again, a password hidden and odd values quoted', () => {
    const command = parse([
      '--store',
      'postgres',
      '--postgres-url',
      'postgres://app:secret@db:5432/app',
      '--postgres-schema',
      "it's mine",
    ]);
    expect(command).toMatchObject({
      continueFlags: [
        '--store',
        'postgres',
        '--postgres-url',
        "'postgres://app:***@db:5432/app'",
        '--postgres-schema',
        `'it'\\''s mine'`,
      ],
    });
    expect(parse(['--store', 'redis', '--redis-url', 'redis://cache:6380'])).toMatchObject({
      continueFlags: ['--store', 'redis', '--redis-url', 'redis://cache:6380'],
    });
  });

  it('reads --mcp, a file of MCP servers, resolved from the folder the command was run in', () => {
    expect(
      parse(['--mcp', 'servers/mcp.json']).type === 'chat' && parse(['--mcp', 'servers/mcp.json']),
    ).toMatchObject({
      settings: { mcpConfig: '/home/me/servers/mcp.json' },
    });
    expect(parse(['serve', '--mcp', '/etc/mcp.json'])).toMatchObject({
      settings: { mcpConfig: '/etc/mcp.json' },
    });
    expect((parse([]) as Extract<Command, { type: 'chat' }>).settings.mcpConfig).toBeUndefined();
    expect(refusal(['--mcp', ' '])).toBe('--mcp needs a value (see --help)');
  });

  it('reads serve flags and tokens from flags and ASSISTANT_TOKENS', () => {
    const command = parse(
      [
        'serve',
        '--host',
        '0.0.0.0',
        '--port',
        '0',
        '--token',
        'alice=a1',
        '--token',
        'solo',
        '--store',
        'redis',
      ],
      { ASSISTANT_TOKENS: ' bob=b1 , alice=a2,', REDIS_URL: 'redis://cache:6380' },
    );
    expect(command).toMatchObject({ type: 'serve', host: '0.0.0.0', port: 0 });
    expect(command.type === 'serve' && [...command.tokens]).toEqual([
      ['a1', 'alice'],
      ['solo', 'default'],
      ['b1', 'bob'],
      ['a2', 'alice'],
    ]);
    expect(command.type === 'serve' && command.settings.redisUrl).toBe('redis://cache:6380');
  });

  it('takes the PostgreSQL URL from --postgres-url, else DATABASE_URL', () => {
    const env = { DATABASE_URL: 'postgres://app@db:5432/app' };
    expect(parse(['--store', 'postgres'], env)).toMatchObject({
      settings: { store: 'postgres', postgresUrl: 'postgres://app@db:5432/app' },
    });
    expect(
      parse(['--store', 'postgres', '--postgres-url', 'postgres://me@127.0.0.1/mine'], env),
    ).toMatchObject({ settings: { store: 'postgres', postgresUrl: 'postgres://me@127.0.0.1/mine' } });
    expect(parse(['--store', 'postgres', '--postgres-schema', 'team_a'], env)).toMatchObject({
      settings: { postgresSchema: 'team_a' },
    });
    // DATABASE_URL alone does not pick the store.
    expect(parse([], env)).toMatchObject({ settings: { store: 'sqlite' } });
  });

  it('serves on 127.0.0.1:8787 without tokens by default', () => {
    expect(parse(['serve'])).toMatchObject({
      type: 'serve',
      host: '127.0.0.1',
      port: 8787,
      tokens: new Map(),
    });
    expect(parse(['serve', '--host', '::1'])).toMatchObject({ host: '::1' });
  });

  it('returns help for -h and --help', () => {
    expect(parse(['-h'])).toEqual({ type: 'help' });
    expect(parse(['serve', '--help'])).toEqual({ type: 'help' });
  });

  it.each([
    [['--nope'], 'Unknown flag "--nope" (see --help)'],
    [['--thread'], 'The flag "--thread" needs a value (see --help)'],
    [['--thread', ''], '--thread needs a value (see --help)'],
    [['talk'], 'Unknown command "talk"; the commands are chat, serve and worker (see --help)'],
    [
      ['worker'],
      'worker needs --dispatch redis or --dispatch postgres: where it takes work from (see --help)',
    ],
    [['--dispatch', 'redis'], '--dispatch only applies to the serve and worker commands (see --help)'],
    [['serve', '--dispatch', 'kafka'], '--dispatch must be one of redis, postgres, got "kafka" (see --help)'],
    [
      ['serve', '--dispatch', 'redis', '--store', 'memory'],
      '--dispatch needs a store every process can reach; --store memory is one process only (see --help)',
    ],
    [['serve', '--concurrency', '2'], '--concurrency only applies to the worker command (see --help)'],
    [
      ['worker', '--dispatch', 'redis', '--concurrency', '0'],
      '--concurrency must be a whole number from 1 to 256, got "0" (see --help)',
    ],
    [['chat', 'extra'], 'Unexpected argument "extra" (see --help)'],
    [
      ['--store', 'mongo'],
      '--store must be one of sqlite, memory, redis, postgres, got "mongo" (see --help)',
    ],
    [['--store', 'postgres'], '--store postgres needs --postgres-url <url> or DATABASE_URL (see --help)'],
    [
      ['--postgres-url', 'postgres://x'],
      '--postgres-url only applies with --store postgres or --dispatch postgres (see --help)',
    ],
    [
      ['serve', '--dispatch', 'postgres'],
      '--dispatch postgres needs --postgres-url <url> or DATABASE_URL (see --help)',
    ],
    [['--postgres-schema', 'x'], '--postgres-schema only applies with --store postgres (see --help)'],
    [
      ['--provider', 'gemini'],
      '--provider must be one of openai, anthropic, demo, got "gemini" (see --help)',
    ],
    [
      ['--redis-url', 'redis://x'],
      '--redis-url only applies with --store redis or --dispatch redis (see --help)',
    ],
    [['--port', '80'], '--port only applies to the serve command (see --help)'],
    [['serve', '--thread', 't'], '--thread only applies to the chat command (see --help)'],
    [['--create'], '--create needs --thread <id> (see --help)'],
    [['serve', '--port', '70000'], '--port must be a whole number from 0 to 65535, got "70000" (see --help)'],
    [['serve', '--port', 'http'], '--port must be a whole number from 0 to 65535, got "http" (see --help)'],
    [['serve', '--token', '=abc'], 'Token "=abc" should look like <resource>=<token> (see --help)'],
    [['serve', '--token', 'a=t', '--token', 'b=t'], 'A token is listed twice (for "a" and "b")'],
    [
      ['serve', '--host', '0.0.0.0'],
      'Refusing to serve on 0.0.0.0 without authentication; pass --token <token> or set ASSISTANT_TOKENS (see --help)',
    ],
  ])('refuses %j', (args, message) => {
    expect(refusal(args)).toBe(message);
  });
});
