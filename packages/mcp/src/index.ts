export type {
  McpHttpServerConfig,
  McpServerConfig,
  McpStdioServerConfig,
  McpToolFilter,
  McpToolInfo,
} from './mcp-server-config.js';
export {
  MCP_IDEMPOTENCY_KEY_META,
  MCP_INPUT_ACTION,
  type McpInputDecisionPayload,
  type McpInputTicketParameters,
} from './mcp-tool.js';
export { McpToolset, type McpToolsetOptions } from './mcp-toolset.js';
