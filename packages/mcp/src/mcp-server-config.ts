import { LunationError } from '@lunation/contract';

/** Which of a server's tools an agent gets: MCP tool-name globs (`*`, `?`), or a predicate. */
export type McpToolFilter =
  | {
      /** Only tools matching one of these globs. @default every tool */
      include?: string[];
      /** No tool matching one of these globs (wins over `include`). */
      exclude?: string[];
    }
  | ((tool: McpToolInfo) => boolean);

/** An MCP tool as its server lists it, as filters and listeners see it. */
export interface McpToolInfo {
  /** The server's name in the toolset. */
  readonly server: string;
  /** The tool's name on its server. */
  readonly name: string;
  /** The Lunation tool's name: the server's prefix, `__`, the tool's name (made safe for every model). */
  readonly lunationName: string;
  readonly description: string | undefined;
  readonly annotations: Readonly<Record<string, unknown>> | undefined;
}

/** What every server entry may set. */
interface McpServerCommon {
  /** The server's name: 1-32 letters, digits, `_` or `-`. Its tools are named `<name>__<tool>`. */
  name: string;
  /** The prefix of its tools' names instead of `name` (`''` for none). @default name */
  prefix?: string;
  /** Which of its tools the agent gets. */
  tools?: McpToolFilter;
  /** Milliseconds a call may take before it is an error result the model sees. @default 60_000 */
  timeoutMs?: number;
  /** Milliseconds to connect (and, per attempt, to reconnect). @default 15_000 */
  connectTimeoutMs?: number;
  /**
   * Protocol version negotiation: `auto` probes for 2026-07-28 and falls back to the 2025 handshake,
   * `legacy` speaks 2025 only, `{ pin }` one modern version only. @default 'auto'
   */
  protocol?: 'auto' | 'legacy' | { pin: string };
  /**
   * Most tries to connect again after a call's connection dropped (a server restart), before the call fails.
   * Tries back off exponentially with jitter (100 ms doubling to 2 s) and stop at the call's timeout (60 s for a
   * call without one); the cut-off call is then sent again once, with its idempotency key.
   * @default as many as fit in the call's timeout
   */
  reconnectAttempts?: number;
}

/** A server started as a child process, spoken to over its stdin/stdout. */
export interface McpStdioServerConfig extends McpServerCommon {
  transport: 'stdio';
  command: string;
  args?: string[];
  /** Environment variables (added to a safe default set: PATH, HOME, ...). */
  env?: Record<string, string>;
  cwd?: string;
}

/** A server reached over Streamable HTTP. */
export interface McpHttpServerConfig extends McpServerCommon {
  transport: 'http';
  url: string;
  /** Headers sent with every request (e.g. `Authorization`). */
  headers?: Record<string, string>;
}

/** One MCP server of a toolset. */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

const SERVER_NAME = /^[a-zA-Z0-9_-]{1,32}$/;

/** Checks a toolset's server list; throws `invalid-argument` naming every problem. */
export function checkServerConfigs(servers: readonly McpServerConfig[]): void {
  const problems: string[] = [];
  const names = new Set<string>();
  if (!Array.isArray(servers) || servers.length === 0) problems.push('give at least one server');
  for (const [index, server] of (Array.isArray(servers) ? servers : []).entries()) {
    const label = `servers[${index}]`;
    if (typeof server !== 'object' || server === null) {
      problems.push(`${label} is not an object`);
      continue;
    }
    if (typeof server.name !== 'string' || !SERVER_NAME.test(server.name)) {
      problems.push(
        `${label}.name must be 1-32 letters, digits, "_" or "-" (got ${JSON.stringify(server.name)})`,
      );
    } else if (names.has(server.name)) {
      problems.push(`${label}.name "${server.name}" is used twice`);
    } else names.add(server.name);
    if (
      server.prefix !== undefined &&
      (typeof server.prefix !== 'string' || !/^[a-zA-Z0-9_-]{0,32}$/.test(server.prefix))
    )
      problems.push(`${label}.prefix must be 0-32 letters, digits, "_" or "-"`);
    if (server.transport === 'stdio') {
      if (typeof server.command !== 'string' || server.command.length === 0)
        problems.push(`${label}.command must be a non-empty string`);
    } else if (server.transport === 'http') {
      if (typeof server.url !== 'string' || !URL.canParse(server.url))
        problems.push(`${label}.url must be an absolute URL (got ${JSON.stringify(server.url)})`);
    } else {
      problems.push(`${label}.transport must be "stdio" or "http"`);
    }
    for (const key of ['timeoutMs', 'connectTimeoutMs', 'reconnectAttempts'] as const) {
      const value = server[key];
      if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value < 0))
        problems.push(`${label}.${key} must be a number >= 0`);
    }
  }
  if (problems.length > 0) {
    throw new LunationError('invalid-argument', `Invalid MCP server config: ${problems.join('; ')}`);
  }
}
