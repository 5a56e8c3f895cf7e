import { CheckedDispatcher } from '@lunation/contract/dispatch-utils';
import { BullMQBackend } from './bullmq-backend.js';
import type { BullMQDispatcherOptions } from './bullmq-dispatcher-options.js';

/**
 * A `Dispatcher` on BullMQ and Redis: one BullMQ job per thread with work, claimed by hand (a Worker without a
 * processor); inboxes, tenant slots, counters, cancel requests and run event streams in Redis next to it.
 *
 * @remarks Standalone Redis (or one primary) only: scripts touch keys of several threads.
 */
export class BullMQDispatcher extends CheckedDispatcher {
  declare readonly kind: 'bullmq';

  constructor(options: BullMQDispatcherOptions = {}) {
    super(new BullMQBackend(options));
  }
}
