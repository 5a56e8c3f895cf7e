export type { RetryOptions } from '@lunation/contract/provider-utils';
export type { MaxTokensField, ReasoningHistory } from './build-request.js';
export { type McpApprovalArguments, mcpApprovalTool } from './mcp-approval.js';
export { type OpenAIClient, OpenAIModel, type OpenAIModelOptions } from './openai-model.js';
export {
  type OpenAIResponsesClient,
  OpenAIResponsesModel,
  type OpenAIResponsesModelOptions,
} from './openai-responses-model.js';
export type { OpenAIHostedTool, OpenAIItemMetadata, ReasoningSummary } from './responses-build-request.js';
export type { StrictSchemas } from './strict-schema.js';
