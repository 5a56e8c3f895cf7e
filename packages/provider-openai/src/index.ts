export type { RetryOptions } from '@lunation/contract';
export type { MaxTokensField } from './build-request.js';
export { type OpenAIClient, OpenAIModel, type OpenAIModelOptions } from './openai-model.js';
