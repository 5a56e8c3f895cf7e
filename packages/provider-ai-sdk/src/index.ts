export type { RetryOptions } from '@lunation/contract/provider-utils';
export { AiSdkModel, type AiSdkModelOptions } from './ai-sdk-model.js';
