import type { Clock, DispatchPolicy, IdSource } from '@lunation/contract';
import { CheckedDispatcher } from '@lunation/contract/dispatch-utils';
import { LocalDispatchBackend, type LocalDispatchBackendOptions } from './local-dispatch-backend.js';
import { LocalDispatchOperations } from './local-dispatch-operations.js';

export { LocalDispatchBackend, type LocalDispatchBackendOptions };

/** Options of {@link LocalDispatcher}: the contract's policy, plus where the state lives. */
export interface LocalDispatcherOptions extends DispatchPolicy {
  /** Another LocalDispatcher's `backend`, to share its state. @default a new backend */
  backend?: LocalDispatchBackend;
  /** The lock of a claim made without `lockMs`. @default 30000 */
  lockMs?: number;
  /**
   * This dispatcher's timers (claim waits), and the clock of the backend it makes (a given `backend` keeps its
   * own: the shared state has one clock). A simulation passes a virtual clock. @default systemClock
   */
  clock?: Clock;
  /** Where the backend it makes takes claim tokens and cancel request ids from (a given `backend` keeps its own). @default systemIds */
  ids?: IdSource;
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
    const { clock, ids, lockMs = 30_000, ...rest } = options;
    const {
      backend = new LocalDispatchBackend({ ...(clock && { clock }), ...(ids && { ids }) }),
      ...policy
    } = rest;
    super(new LocalDispatchOperations(backend, policy, lockMs, clock ?? backend.clock));
    this.backend = backend;
  }
}
