export {
  BullMQDispatcher,
  type BullMQDispatcherClientOptions,
  type BullMQDispatcherCommonOptions,
  type BullMQDispatcherOptions,
  type BullMQDispatcherUrlOptions,
} from './bullmq-dispatcher.js';
