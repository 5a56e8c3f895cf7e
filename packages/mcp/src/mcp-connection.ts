import { LunationError } from '@lunation/contract';
import {
  type CallToolResult,
  Client,
  type ElicitRequest,
  type ElicitResult,
  SdkError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
  type Tool,
  type Transport,
} from '@modelcontextprotocol/client';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { McpServerConfig } from './mcp-server-config.js';

/** The default milliseconds of a call. */
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 15_000;
/** Back-off between reconnect tries: the first wait, its growth per try and its cap (each halved by jitter). */
const RECONNECT_FIRST_DELAY_MS = 100;
const RECONNECT_GROWTH = 2;
const RECONNECT_MAX_DELAY_MS = 2_000;
const STDERR_TAIL = 2_000;

/** A call's round that the server answered with `input_required` (2026-07-28) or an elicitation (2025). */
export interface InputRequired {
  readonly kind: 'input-required';
  /** The server's embedded requests by key (`elicitation/create` with its params, ...). */
  readonly inputRequests: Record<string, { method: string; params?: unknown }>;
  /** The server's opaque state of the call (2026-07-28), echoed back when retried. */
  readonly requestState: string | undefined;
}

/** One call in flight: answers for a 2025 server's elicitations, and the elicitations it made. */
export interface CallRound {
  /** Answers by input key (`elicitation-1`, ... for a 2025 server). */
  readonly answers: Record<string, unknown> | undefined;
  /** Elicitations a 2025 server made during the call that had no answer (they were cancelled). */
  readonly unanswered: Record<string, { method: string; params?: unknown }>;
  asked: number;
}

/** What a call sends besides the tool's name and arguments. */
export interface CallOptions {
  readonly meta: Record<string, unknown>;
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
  /** When the call's time runs out (epoch ms): reconnecting to a server that is gone stops there. */
  readonly deadline: number;
  readonly inputResponses?: Record<string, unknown>;
  readonly requestState?: string;
  readonly onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
}

/** What a connection needs from its toolset. */
export interface ConnectionHost {
  readonly clientInfo: { name: string; version: string };
  /** Advertise elicitation (the agent suspends for it). */
  readonly elicitation: boolean;
  /** Called when the server's tool list changed (after it was fetched again). */
  toolsChanged(connection: McpConnection): void;
}

/**
 * One MCP server: its client over stdio or Streamable HTTP, the tools it lists, reconnection when the
 * connection dropped, and the calls in flight (a 2025 server's elicitations are matched to them).
 */
export class McpConnection {
  private client: Client | undefined;
  private opening: Promise<Client> | undefined;
  private closed = false;
  private everConnected = false;
  private stderrTail = '';
  private readonly rounds = new Set<CallRound>();
  /** The tools the server listed last. */
  tools: readonly Tool[] = [];

  constructor(
    readonly config: McpServerConfig,
    private readonly host: ConnectionHost,
  ) {}

  /** The protocol version agreed with the server (undefined before the first connect). */
  get protocolVersion(): string | undefined {
    return this.client?.getNegotiatedProtocolVersion();
  }

  /** True when the connection speaks 2026-07-28 or later (calls may answer `input_required`). */
  get modern(): boolean {
    return this.client?.getProtocolEra() === 'modern';
  }

  /** Connects (if not connected) and lists the tools. */
  async connect(): Promise<void> {
    if (this.closed) throw this.closedError();
    let client: Client;
    try {
      client =
        this.client ?? (await this.openOnce(this.config.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS));
    } catch (error) {
      throw new LunationError(
        'mcp-unavailable',
        `MCP server "${this.config.name}" could not be reached: ${this.describe(error)}`,
        { cause: error, details: { server: this.config.name } },
      );
    }
    await this.refreshTools(client);
  }

  /**
   * Connects again after the connection dropped (a server restart, a deploy): tries at once, then backs off
   * exponentially with jitter between tries, until `deadline` or `reconnectAttempts` tries. Concurrent calls
   * share each try. Throws `mcp-unavailable` naming the tries and the last failure.
   */
  async reconnect(deadline: number, signal: AbortSignal): Promise<Client> {
    const started = Date.now();
    const limit = this.config.reconnectAttempts;
    let last: unknown;
    let tries = 0;
    for (;;) {
      if (this.closed) throw this.closedError();
      if (this.client) return this.client;
      const remaining = deadline - Date.now();
      if (remaining <= 0 || signal.aborted) break;
      tries += 1;
      try {
        return await this.openOnce(
          Math.min(this.config.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, remaining),
        );
      } catch (error) {
        last = error;
      }
      if (limit !== undefined && tries >= Math.max(1, limit)) break;
      const delay = backoffDelay(tries);
      if (Date.now() + delay >= deadline) break;
      await sleep(delay, signal);
    }
    throw new LunationError(
      'mcp-unavailable',
      `the connection was cut and the server could not be reached again (${tries} ${tries === 1 ? 'try' : 'tries'} in ${Date.now() - started} ms): ${this.describe(last ?? 'out of time')}`,
      { cause: last, details: { server: this.config.name, tries } },
    );
  }

  /** Calls a tool; answers the round's elicitations from `round`. Throws the SDK's errors as they are. */
  async call(
    name: string,
    input: unknown,
    options: CallOptions,
    round: CallRound,
  ): Promise<CallToolResult | InputRequired> {
    const client = this.client ?? (await this.reconnect(options.deadline, options.signal));
    const params: Record<string, unknown> = {
      name,
      arguments: (input ?? {}) as Record<string, unknown>,
      _meta: options.meta,
    };
    if (client.getProtocolEra() === 'modern') {
      if (options.inputResponses !== undefined) params.inputResponses = options.inputResponses;
      if (options.requestState !== undefined) params.requestState = options.requestState;
    }
    this.rounds.add(round);
    try {
      const result = (await client.callTool(params as never, {
        timeout: options.timeoutMs,
        signal: options.signal,
        allowInputRequired: true,
        ...(options.onProgress ? { onprogress: options.onProgress, resetTimeoutOnProgress: false } : {}),
      })) as CallToolResult & { resultType?: string; inputRequests?: unknown; requestState?: unknown };
      if (result.resultType === 'input_required') {
        return {
          kind: 'input-required',
          inputRequests: (result.inputRequests ?? {}) as InputRequired['inputRequests'],
          requestState: typeof result.requestState === 'string' ? result.requestState : undefined,
        };
      }
      if (Object.keys(round.unanswered).length > 0) {
        return { kind: 'input-required', inputRequests: { ...round.unanswered }, requestState: undefined };
      }
      return result;
    } catch (error) {
      // The connection is gone (a restart cut it): the next call or re-send connects again.
      if (callFailure(error).disconnected && this.client === client) {
        this.client = undefined;
        void client.close().catch(() => undefined);
      }
      throw error;
    } finally {
      this.rounds.delete(round);
    }
  }

  /** Closes the client (and stops a stdio server). */
  async close(): Promise<void> {
    this.closed = true;
    const client = this.client ?? (await this.opening?.catch(() => undefined));
    this.client = undefined;
    await client?.close().catch(() => undefined);
  }

  /** The text of a failure to reach the server, with the end of its stderr. */
  describe(error: unknown): string {
    const message = error instanceof Error ? error.message : String(error);
    const tail = this.stderrTail.trim();
    return tail === '' ? message : `${message} (server stderr: ${tail.slice(-500)})`;
  }

  private closedError(): LunationError {
    return new LunationError('mcp-unavailable', `MCP server "${this.config.name}" was closed`, {
      details: { server: this.config.name },
    });
  }

  /** One try to connect, shared by everyone who asks while it runs; lists the tools again after a reconnect. */
  private openOnce(timeoutMs: number): Promise<Client> {
    if (!this.opening) {
      this.opening = (async () => {
        const client = await this.open(timeoutMs);
        if (this.everConnected) await this.refreshTools(client).catch(() => undefined);
        this.everConnected = true;
        return client;
      })().finally(() => {
        this.opening = undefined;
      });
    }
    return this.opening;
  }

  private async open(timeoutMs: number): Promise<Client> {
    const { config, host } = this;
    const protocol = config.protocol ?? 'auto';
    const client = new Client(host.clientInfo, {
      capabilities: host.elicitation ? { elicitation: { form: {} } } : {},
      versionNegotiation: { mode: protocol },
      inputRequired: { autoFulfill: false },
      listChanged: {
        tools: {
          onChanged: (error, tools) => {
            if (error || !tools || this.client !== client) return;
            this.tools = tools;
            this.host.toolsChanged(this);
          },
        },
      },
    });
    if (host.elicitation) {
      client.setRequestHandler('elicitation/create', (request) => this.elicit(request));
    }
    const transport = this.transport();
    try {
      await client.connect(transport, { timeout: timeoutMs });
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    }
    client.onclose = () => {
      if (this.client === client) this.client = undefined;
    };
    this.client = client;
    return client;
  }

  private transport(): Transport {
    const { config } = this;
    if (config.transport === 'http') {
      return new StreamableHTTPClientTransport(new URL(config.url), {
        ...(config.headers ? { requestInit: { headers: config.headers } } : {}),
      });
    }
    const transport = new StdioClientTransport({
      command: config.command,
      ...(config.args ? { args: config.args } : {}),
      env: { ...getDefaultEnvironment(), ...(config.env ?? {}) },
      ...(config.cwd ? { cwd: config.cwd } : {}),
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer | string) => {
      this.stderrTail = (this.stderrTail + String(chunk)).slice(-STDERR_TAIL);
    });
    return transport;
  }

  private async refreshTools(client: Client): Promise<void> {
    const { tools } = await client.listTools(undefined, {
      timeout: this.config.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      cacheMode: 'refresh',
    });
    const changed = JSON.stringify(tools) !== JSON.stringify(this.tools);
    this.tools = tools;
    if (changed) this.host.toolsChanged(this);
  }

  /**
   * A 2025 server's elicitation during a call: answered from the call's decision when it has one, else
   * recorded (the call then suspends for it) and cancelled. With several calls in flight it cannot be told
   * which one asked: it is declined.
   */
  private elicit(request: ElicitRequest): ElicitResult {
    const [round, other] = this.rounds;
    if (round === undefined || other !== undefined) return { action: 'decline' };
    round.asked += 1;
    const key = `elicitation-${round.asked}`;
    const answer = round.answers?.[key];
    if (answer !== undefined && typeof answer === 'object' && answer !== null && 'action' in answer) {
      return answer as ElicitResult;
    }
    round.unanswered[key] = { method: 'elicitation/create', params: request.params };
    return { action: 'cancel' };
  }
}

/** The wait before reconnect try `tries + 1`: exponential, capped, with "equal jitter" (half of it random). */
function backoffDelay(tries: number): number {
  const ceiling = Math.min(
    RECONNECT_MAX_DELAY_MS,
    RECONNECT_FIRST_DELAY_MS * RECONNECT_GROWTH ** (tries - 1),
  );
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** A readable reason for a failed call, and whether the connection is gone. */
export function callFailure(error: unknown): { reason: string; timedOut: boolean; disconnected: boolean } {
  if (error instanceof SdkError) {
    if (error.code === SdkErrorCode.RequestTimeout)
      return { reason: error.message, timedOut: true, disconnected: false };
    if (error.code === SdkErrorCode.ConnectionClosed)
      return { reason: error.message, timedOut: false, disconnected: true };
  }
  if (LunationError.hasCode(error, 'mcp-unavailable'))
    return { reason: error.message, timedOut: false, disconnected: true };
  // fetch's own failure: the HTTP connection was refused or cut off mid-call (the outcome is unknown).
  if (error instanceof TypeError && error.message === 'fetch failed')
    return { reason: error.message, timedOut: false, disconnected: true };
  return {
    reason: error instanceof Error ? error.message : String(error),
    timedOut: false,
    disconnected: false,
  };
}
