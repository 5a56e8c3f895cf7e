import { LunationError, type PortableTool } from '@lunation/contract';
import { type ConnectionHost, McpConnection } from './mcp-connection.js';
import { checkServerConfigs, type McpServerConfig, type McpToolInfo } from './mcp-server-config.js';
import { mcpTool } from './mcp-tool.js';
import { lunationToolName, toolPredicate } from './tool-naming.js';

/** What {@link McpToolset} takes. */
export interface McpToolsetOptions {
  /** The servers, each with a unique name. */
  servers: McpServerConfig[];
  /**
   * Offer elicitation to the servers: a server's request for input during a call suspends the call with an
   * `mcp-input` ticket, answered through the decisions API, and the call is retried with the answer. Turn it
   * on only for agents whose runs can wait for a decision; off, a request for input is an error result.
   * @default false
   */
  elicitation?: boolean;
  /** How this client names itself to the servers. @default { name: 'lunation', version: '0' } */
  clientInfo?: { name: string; version: string };
}

/**
 * Several MCP servers' tools as Lunation tools: `connect()`, then give `tools()` to an agent. Tool names are
 * `<server>__<tool>`; a server's tool-list changes reach `onToolsChanged` listeners.
 */
export class McpToolset {
  private readonly connections: McpConnection[];
  private readonly listeners = new Set<(tools: PortableTool[]) => void>();
  private readonly elicitation: boolean;
  private current: { tools: PortableTool[]; infos: McpToolInfo[] } | undefined;

  constructor(options: McpToolsetOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new LunationError('invalid-argument', 'McpToolset needs options with a list of servers');
    }
    checkServerConfigs(options.servers);
    this.elicitation = options.elicitation === true;
    const host: ConnectionHost = {
      clientInfo: options.clientInfo ?? { name: 'lunation', version: '0' },
      elicitation: this.elicitation,
      toolsChanged: () => this.changed(),
    };
    this.connections = options.servers.map((config) => new McpConnection(config, host));
  }

  /** Creates a toolset and connects it. */
  static async connect(options: McpToolsetOptions): Promise<McpToolset> {
    const toolset = new McpToolset(options);
    try {
      await toolset.connect();
    } catch (error) {
      await toolset.close();
      throw error;
    }
    return toolset;
  }

  /** Connects every server and lists its tools; `mcp-unavailable` naming every server that failed. */
  async connect(): Promise<void> {
    const outcomes = await Promise.allSettled(this.connections.map((connection) => connection.connect()));
    const failed = outcomes.flatMap((outcome) =>
      outcome.status === 'rejected'
        ? [outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason)]
        : [],
    );
    if (failed.length > 0) {
      throw new LunationError('mcp-unavailable', failed.join('; '), {
        details: { servers: this.connections.map((connection) => connection.config.name) },
      });
    }
    this.current = undefined;
  }

  /** The servers' tools as Lunation tools (filtered, namespaced), as last listed. */
  tools(): PortableTool[] {
    return [...this.build().tools];
  }

  /** What each tool is: its server, its name there and its Lunation name. */
  toolInfos(): McpToolInfo[] {
    return [...this.build().infos];
  }

  /** The protocol version each server agreed to (undefined for one not connected). */
  protocolVersions(): Record<string, string | undefined> {
    return Object.fromEntries(
      this.connections.map((connection) => [connection.config.name, connection.protocolVersion]),
    );
  }

  /** Calls `listener` with the new tool list whenever a server's list changed; returns an unsubscribe. */
  onToolsChanged(listener: (tools: PortableTool[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Closes every connection (stdio servers are stopped). */
  async close(): Promise<void> {
    this.listeners.clear();
    await Promise.all(this.connections.map((connection) => connection.close()));
  }

  private changed(): void {
    this.current = undefined;
    if (this.listeners.size === 0) return;
    const tools = this.tools();
    for (const listener of this.listeners) listener(tools);
  }

  private build(): { tools: PortableTool[]; infos: McpToolInfo[] } {
    if (this.current) return this.current;
    const tools: PortableTool[] = [];
    const infos: McpToolInfo[] = [];
    const taken = new Set<string>();
    for (const connection of this.connections) {
      const { config } = connection;
      const include = toolPredicate(config.tools);
      for (const tool of connection.tools) {
        const lunationName = lunationToolName(config.prefix ?? config.name, tool.name, taken);
        const info: McpToolInfo = {
          server: config.name,
          name: tool.name,
          lunationName,
          description: tool.description,
          annotations: tool.annotations as McpToolInfo['annotations'],
        };
        if (!include(info)) continue;
        taken.add(lunationName);
        infos.push(info);
        tools.push(mcpTool(connection, tool, lunationName, { elicitation: this.elicitation }));
      }
    }
    this.current = { tools, infos };
    return this.current;
  }
}
