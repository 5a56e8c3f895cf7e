import { readFile } from 'node:fs/promises';
import { LunationError } from '@lunation/contract';
import { type McpServerConfig, McpToolset } from '@lunation/mcp';

/** The `--mcp` file: `{ "servers": [...], "elicitation"?: boolean }` (servers as `McpServerConfig`). */
export interface AssistantMcpConfig {
  servers: McpServerConfig[];
  elicitation?: boolean;
}

/** Reads the `--mcp` file and connects its servers; `invalid-argument` for a file that is not such JSON. */
export async function openMcp(path: string): Promise<McpToolset> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new LunationError(
      'invalid-argument',
      `Cannot read the MCP config ${path}: ${(error as Error).message}`,
    );
  }
  let config: AssistantMcpConfig;
  try {
    config = JSON.parse(text) as AssistantMcpConfig;
  } catch (error) {
    throw new LunationError(
      'invalid-argument',
      `The MCP config ${path} is not JSON: ${(error as Error).message}`,
    );
  }
  if (typeof config !== 'object' || config === null || !Array.isArray(config.servers)) {
    throw new LunationError('invalid-argument', `The MCP config ${path} needs a "servers" list`);
  }
  return McpToolset.connect({
    servers: config.servers,
    elicitation: config.elicitation === true,
    clientInfo: { name: 'lunation-assistant', version: '0' },
  });
}
