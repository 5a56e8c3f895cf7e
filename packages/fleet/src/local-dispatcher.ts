import type { DispatchPolicy } from '@lunation/contract';
import { CheckedDispatcher } from '@lunation/contract/dispatch-utils';
import { LocalDispatchBackend } from './local-dispatch-backend.js';
import { LocalDispatchOperations } from './local-dispatch-operations.js';

export { LocalDispatchBackend };

/** Options of {@link LocalDispatcher}: the contract's policy, plus where the state lives. */
export interface LocalDispatcherOptions extends DispatchPolicy {
  /** Another LocalDispatcher's `backend`, to share its state. @default a new backend */
  backend?: LocalDispatchBackend;
  /** The lock of a claim made without `lockMs`. @default 30000 */
  lockMs?: number;
}

/**
 * The in-process dispatcher: per-thread inboxes, one claim per thread, retries and dead letters, cancel requests
 * and run event logs in this process's memory. Nothing survives the process; use a durable dispatcher
 * (`@lunation/dispatch-bullmq`) to spread work over processes. Submissions and events are kept by reference,
 * not copied: do not change them after handing them over.
 */
export class LocalDispatcher extends CheckedDispatcher {
  declare readonly kind: 'local';
  /** The shared state; pass it as `backend` to build a sibling dispatcher. */
  readonly backend: LocalDispatchBackend;

  constructor(options: LocalDispatcherOptions = {}) {
    const { backend = new LocalDispatchBackend(), lockMs = 30_000, ...policy } = options;
    super(new LocalDispatchOperations(backend, policy, lockMs));
    this.backend = backend;
  }
}
