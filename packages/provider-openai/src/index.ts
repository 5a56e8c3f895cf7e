export type { MaxTokensField } from './build-request.js';
export { type OpenAIClient, OpenAIModel, type OpenAIModelOptions } from './openai-model.js';
export type { RetryOptions } from './retry.js';
