import { LocalCancels } from './local-cancels.js';
import { LocalRunEvents } from './local-run-events.js';
import { LocalWorkQueue } from './local-work-queue.js';

/**
 * The state of local dispatchers: threads, inboxes, claims, cancel requests and run event logs, in this
 * process's memory. Several `LocalDispatcher`s built on one backend share it, as processes share a Redis.
 * Treat it as opaque: only LocalDispatcher reads and writes it.
 */
export class LocalDispatchBackend {
  /** @internal */
  readonly work = new LocalWorkQueue();
  /** @internal */
  readonly events = new LocalRunEvents();
  /** @internal */
  readonly cancels = new LocalCancels();
}
