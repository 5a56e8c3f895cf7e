export type { RetryOptions } from '@lunation/contract/provider-utils';
export { type AnthropicClient, AnthropicModel, type AnthropicModelOptions } from './anthropic-model.js';
export {
  type AnthropicMcpServer,
  type AnthropicServerTool,
  MCP_CONNECTOR_BETA,
  type ThinkingMode,
  thinkingBudgets,
} from './build-request.js';
