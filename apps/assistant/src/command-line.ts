import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { LunationError } from '@lunation/contract';
import type { ProviderKind } from './create-model.js';
import { redactPassword, type StoreKind } from './open-store.js';
import type { TraceKind } from './open-tracing.js';
import { DEFAULT_STARTUP_WAIT_SECONDS } from './startup-wait.js';
import { parseTokens } from './token-auth.js';

/** Where a fleet's work goes between servers and workers: a BullMQ queue on Redis, or pg-boss on PostgreSQL. */
export type DispatchKind = 'redis' | 'postgres';

/** Settings shared by every command. */
export interface AssistantSettings {
  store: StoreKind;
  sqlitePath: string;
  redisUrl: string;
  /** The PostgreSQL server (`--postgres-url` or `DATABASE_URL`); required with `--store postgres`. */
  postgresUrl: string | undefined;
  /** The schema of the assistant's tables in PostgreSQL. */
  postgresSchema: string;
  /** Undefined: chosen from the API keys in the environment. */
  provider: ProviderKind | undefined;
  model: string | undefined;
  dataDir: string;
  sandbox: string;
  /** Serve or work as part of a fleet through this dispatcher; undefined: one process does everything. */
  dispatch: DispatchKind | undefined;
  /** A JSON file listing MCP servers whose tools the assistant gets (`--mcp`); undefined: none. */
  mcpConfig: string | undefined;
  /** Trace runs with OpenTelemetry to the console or an OTLP collector; undefined: no tracing. */
  trace: TraceKind | undefined;
  /** How long to keep trying the store and dispatcher at start-up (`--startup-wait`, `ASSISTANT_STARTUP_WAIT`). */
  startupWaitMs: number;
}

export type Command =
  | { type: 'help' }
  | {
      type: 'chat';
      settings: AssistantSettings;
      threadId: string | undefined;
      /** Start `threadId` when it does not exist yet. */
      create: boolean;
      /**
       * The flags that reach the same store (and model) again, for the "continue it later" hint: `--store` and
       * its options, `--data-dir`, `--sandbox`, `--provider`, `--model` as given (a password in a URL as `***`).
       */
      continueFlags: string[];
    }
  | {
      type: 'serve';
      settings: AssistantSettings;
      host: string;
      port: number;
      /** Bearer token → resource id; empty means no authentication. */
      tokens: Map<string, string>;
    }
  | {
      type: 'worker';
      settings: AssistantSettings & { dispatch: DispatchKind };
      /** Threads worked on at once. */
      concurrency: number;
      /** Serve the worker's Prometheus metrics on this port (`--metrics-port`); undefined: none. */
      metricsPort: number | undefined;
    };

/** `apps/assistant/data`, wherever the command is run from. */
export const DEFAULT_DATA_DIR = fileURLToPath(new URL('../data/', import.meta.url));

export const HELP = `Lunation assistant: a chat with tools, approvals and durable threads.

Usage:
  pnpm start [chat] [flags]      chat in the terminal (the default command)
  pnpm start serve [flags]       serve the HTTP API (Server-Sent Events)
  pnpm start worker --dispatch redis|postgres [flags]
                                 run the agent for a fleet of servers (serve --dispatch ...)

Flags:
  --thread <id>                  continue a conversation (chat; the id is printed at start);
                                 an unknown id is an error
  --create                       with --thread: start a new thread with that id if there is none
  --provider openai|anthropic|demo
                                 the model provider (default: openai if OPENAI_API_KEY is set,
                                 else anthropic if ANTHROPIC_API_KEY is set, else the offline demo)
  --model <id>                   the model id (default: gpt-5.4-mini / claude-sonnet-5-5)
  --store sqlite|memory|redis|postgres
                                 where threads are kept (default: sqlite)
  --redis-url <url>              default: $REDIS_URL or redis://127.0.0.1:6379
  --postgres-url <url>           with --store postgres (default: $DATABASE_URL), e.g.
                                 postgres://user:password@127.0.0.1:5432/app
  --postgres-schema <name>       with --store postgres: the schema of its tables
                                 (default: lunation_assistant)
  --data-dir <dir>               the SQLite file and sandbox live here (default: apps/assistant/data)
  --sandbox <dir>                the folder read_file may read (default: <data-dir>/sandbox)
  --host <address>               serve: address to bind (default: 127.0.0.1)
  --port <n>                     serve: port, 0 for any free one (default: 8787)
  --token [<resource>=]<token>   serve: accept this bearer token (repeatable; also $ASSISTANT_TOKENS,
                                 comma-separated); each resource sees only its own threads
  --dispatch redis|postgres      serve: only submit work and stream events, for the workers to run
                                 (a BullMQ queue on --redis-url, or pg-boss on --postgres-url);
                                 worker: take work from it. Every server and worker of a fleet names
                                 the same store and dispatcher
  --concurrency <n>              worker: threads run at once (default: 4)
  --metrics-port <n>             worker: serve GET /metrics (Prometheus), /healthz and /readyz at
                                 http://127.0.0.1:<n> (serve answers them on its own port)
  --startup-wait <seconds>       keep trying Redis / PostgreSQL this long at start-up, each try
                                 given 5 s (default: $ASSISTANT_STARTUP_WAIT or 30)
  --mcp <file>                   a JSON file of MCP servers whose tools the assistant gets
                                 ({"servers":[{"name":"everything","transport":"stdio",
                                 "command":"npx","args":[...]}]}, see README)
  --trace console|otlp           trace runs with OpenTelemetry: print spans, or send them to an OTLP
                                 collector ($OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318)
  -h, --help                     show this help

Environment: OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, REDIS_URL,
DATABASE_URL, ASSISTANT_TOKENS, ASSISTANT_STARTUP_WAIT; with --trace: OTEL_EXPORTER_OTLP_* (endpoint, headers, ...),
OTEL_SERVICE_NAME, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (record message contents). Relative paths are resolved from the folder you ran the command in.
`;

const OPTIONS = {
  thread: { type: 'string' },
  create: { type: 'boolean' },
  provider: { type: 'string' },
  model: { type: 'string' },
  store: { type: 'string' },
  'redis-url': { type: 'string' },
  'postgres-url': { type: 'string' },
  'postgres-schema': { type: 'string' },
  'data-dir': { type: 'string' },
  sandbox: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  token: { type: 'string', multiple: true },
  dispatch: { type: 'string' },
  concurrency: { type: 'string' },
  'metrics-port': { type: 'string' },
  'startup-wait': { type: 'string' },
  mcp: { type: 'string' },
  trace: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const ONLY_FOR: Record<string, readonly CommandName[]> = {
  thread: ['chat'],
  create: ['chat'],
  host: ['serve'],
  port: ['serve'],
  token: ['serve'],
  dispatch: ['serve', 'worker'],
  concurrency: ['worker'],
  'metrics-port': ['worker'],
};

type CommandName = 'chat' | 'serve' | 'worker';
const COMMANDS: readonly CommandName[] = ['chat', 'serve', 'worker'];
const DISPATCHERS: readonly DispatchKind[] = ['redis', 'postgres'];
const TRACES: readonly TraceKind[] = ['console', 'otlp'];

const STORES: readonly StoreKind[] = ['sqlite', 'memory', 'redis', 'postgres'];
const PROVIDERS: readonly ProviderKind[] = ['openai', 'anthropic', 'demo'];

function usageError(message: string): LunationError {
  return new LunationError('invalid-argument', `${message} (see --help)`);
}

function oneOf<T extends string>(
  flag: string,
  value: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined) return undefined;
  if (!allowed.includes(value as T)) {
    throw usageError(`--${flag} must be one of ${allowed.join(', ')}, got "${value}"`);
  }
  return value as T;
}

/**
 * Parses the command line. `cwd` anchors relative paths: pnpm runs scripts in the package folder, so
 * `INIT_CWD` (the folder pnpm was started from) is preferred when set.
 */
export function parseCommandLine(
  args: readonly string[],
  env: Record<string, string | undefined>,
  cwd: string = env.INIT_CWD ?? process.cwd(),
): Command {
  // pnpm passes `--` through (`pnpm start -- --flag` may even give two); no argument here starts with `-`.
  const argv = [...args];
  while (argv[0] === '--') argv.shift();
  const { values, positionals } = parseFlags(argv);
  if (values.help) return { type: 'help' };
  const [command = 'chat', ...extra] = positionals as [CommandName?, ...string[]];
  if (!COMMANDS.includes(command)) {
    throw usageError(`Unknown command "${command}"; the commands are chat, serve and worker`);
  }
  if (extra.length > 0) throw usageError(`Unexpected argument "${extra[0]}"`);
  for (const [flag, only] of Object.entries(ONLY_FOR)) {
    if (values[flag as keyof typeof values] !== undefined && !only.includes(command)) {
      throw usageError(
        `--${flag} only applies to the ${only.join(' and ')} command${only.length > 1 ? 's' : ''}`,
      );
    }
  }

  const path = (value: string) => (isAbsolute(value) ? value : resolve(cwd, value));
  const dataDir = values['data-dir'] === undefined ? DEFAULT_DATA_DIR : path(values['data-dir']);
  const settings: AssistantSettings = {
    store: oneOf('store', values.store, STORES) ?? 'sqlite',
    sqlitePath: join(dataDir, 'assistant.sqlite'),
    redisUrl: values['redis-url'] ?? env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    postgresUrl: nonEmpty('postgres-url', values['postgres-url']) ?? (env.DATABASE_URL || undefined),
    postgresSchema: nonEmpty('postgres-schema', values['postgres-schema']) ?? 'lunation_assistant',
    provider: oneOf('provider', values.provider, PROVIDERS),
    model: nonEmpty('model', values.model),
    dataDir,
    sandbox: values.sandbox === undefined ? join(dataDir, 'sandbox') : path(values.sandbox),
    dispatch: oneOf('dispatch', values.dispatch, DISPATCHERS),
    mcpConfig: values.mcp === undefined ? undefined : path(nonEmpty('mcp', values.mcp) ?? ''),
    trace: oneOf('trace', values.trace, TRACES),
    startupWaitMs: startupWait(values['startup-wait'], env.ASSISTANT_STARTUP_WAIT),
  };
  if (values['redis-url'] !== undefined && settings.store !== 'redis' && settings.dispatch !== 'redis') {
    throw usageError('--redis-url only applies with --store redis or --dispatch redis');
  }
  if (settings.dispatch !== undefined && settings.store === 'memory') {
    throw usageError('--dispatch needs a store every process can reach; --store memory is one process only');
  }
  if (
    values['postgres-url'] !== undefined &&
    settings.store !== 'postgres' &&
    settings.dispatch !== 'postgres'
  ) {
    throw usageError('--postgres-url only applies with --store postgres or --dispatch postgres');
  }
  if (values['postgres-schema'] !== undefined && settings.store !== 'postgres') {
    throw usageError('--postgres-schema only applies with --store postgres');
  }
  if (settings.store === 'postgres' && settings.postgresUrl === undefined) {
    throw usageError('--store postgres needs --postgres-url <url> or DATABASE_URL');
  }
  if (settings.dispatch === 'postgres' && settings.postgresUrl === undefined) {
    throw usageError('--dispatch postgres needs --postgres-url <url> or DATABASE_URL');
  }
  if (command === 'chat') {
    const threadId = nonEmpty('thread', values.thread);
    if (values.create && threadId === undefined) throw usageError('--create needs --thread <id>');
    const continueFlags: string[] = [];
    const keep = (
      flag: keyof typeof values,
      value: string | undefined = values[flag] as string | undefined,
    ) => {
      if (value !== undefined) continueFlags.push(`--${flag}`, shellWord(value));
    };
    keep('provider');
    keep('model');
    keep('store');
    keep('redis-url');
    const postgresUrl = values['postgres-url'];
    keep('postgres-url', postgresUrl === undefined ? undefined : redactPassword(postgresUrl));
    keep('postgres-schema');
    keep('data-dir', values['data-dir'] === undefined ? undefined : dataDir);
    keep('sandbox', values.sandbox === undefined ? undefined : settings.sandbox);
    return { type: 'chat', settings, threadId, create: values.create === true, continueFlags };
  }
  if (command === 'worker') {
    const { dispatch } = settings;
    if (dispatch === undefined) {
      throw usageError('worker needs --dispatch redis or --dispatch postgres: where it takes work from');
    }
    const concurrency = values.concurrency === undefined ? 4 : Number(values.concurrency);
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 256) {
      throw usageError(`--concurrency must be a whole number from 1 to 256, got "${values.concurrency}"`);
    }
    const metricsPort = values['metrics-port'] === undefined ? undefined : Number(values['metrics-port']);
    if (
      metricsPort !== undefined &&
      (!Number.isInteger(metricsPort) ||
        metricsPort < 1 ||
        metricsPort > 65_535 ||
        values['metrics-port']?.trim() === '')
    ) {
      throw usageError(
        `--metrics-port must be a whole number from 1 to 65535, got "${values['metrics-port']}"`,
      );
    }
    return { type: 'worker', settings: { ...settings, dispatch }, concurrency, metricsPort };
  }

  const host = nonEmpty('host', values.host) ?? '127.0.0.1';
  const port = values.port === undefined ? 8787 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535 || values.port?.trim() === '') {
    throw usageError(`--port must be a whole number from 0 to 65535, got "${values.port}"`);
  }
  const specs = [...(values.token ?? []), ...(env.ASSISTANT_TOKENS?.split(',') ?? [])]
    .map((spec) => spec.trim())
    .filter((spec) => spec !== '');
  const tokens = parseTokens(specs);
  if (tokens.size === 0 && !isLoopback(host)) {
    throw usageError(
      `Refusing to serve on ${host} without authentication; pass --token <token> or set ASSISTANT_TOKENS`,
    );
  }
  return { type: 'serve', settings, host, port, tokens };
}

function parseFlags(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw usageError(describeParseError(error));
  }
}

/** The start-up wait in milliseconds, from `--startup-wait` or else `ASSISTANT_STARTUP_WAIT` (seconds). */
function startupWait(flag: string | undefined, env: string | undefined): number {
  const [value, source] =
    flag !== undefined ? [flag, '--startup-wait'] : [env || undefined, 'ASSISTANT_STARTUP_WAIT'];
  if (value === undefined) return DEFAULT_STARTUP_WAIT_SECONDS * 1_000;
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds < 0 || seconds > 3_600) {
    throw usageError(`${source} must be a number of seconds from 0 to 3600, got "${value}"`);
  }
  return Math.round(seconds * 1_000);
}

function nonEmpty(flag: string, value: string | undefined): string | undefined {
  if (value !== undefined && value.trim() === '') throw usageError(`--${flag} needs a value`);
  return value;
}

/** `value` as one shell word: as it is when it is plain, else in single quotes. */
export function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`;
}

/** True for addresses only this machine can reach. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

function describeParseError(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  const flag = message.match(/'(-[^' ]+)/)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && flag) return `Unknown flag "${flag}"`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && flag && message.includes('argument missing')) {
    return `The flag "${flag}" needs a value`;
  }
  return message;
}
