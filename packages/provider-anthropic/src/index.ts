export { type AnthropicClient, AnthropicModel, type AnthropicModelOptions } from './anthropic-model.js';
export { type ThinkingMode, thinkingBudgets } from './build-request.js';
export type { RetryOptions } from './retry.js';
