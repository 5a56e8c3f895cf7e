export type { RetryOptions } from '@lunation/contract';
export { AiSdkModel, type AiSdkModelOptions } from './ai-sdk-model.js';
