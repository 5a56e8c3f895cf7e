export { BullMQDispatcher } from './bullmq-dispatcher.js';
export type {
  BullMQDispatcherClientOptions,
  BullMQDispatcherCommonOptions,
  BullMQDispatcherOptions,
  BullMQDispatcherUrlOptions,
} from './bullmq-dispatcher-options.js';
