import { type Clock, type IdSource, type RunEventRecord, systemClock, systemIds } from '@lunation/contract';
import { LocalCancels } from './local-cancels.js';
import { LocalRunEvents } from './local-run-events.js';
import { LocalWorkQueue } from './local-work-queue.js';

/** Options of {@link LocalDispatchBackend}. */
export interface LocalDispatchBackendOptions {
  /** Where the shared state reads time (submissions, locks, retries, log expiry) and sets its timers. @default systemClock */
  clock?: Clock;
  /** Where claim tokens and cancel request ids come from. @default systemIds */
  ids?: IdSource;
}

/**
 * The state of local dispatchers: threads, inboxes, claims, cancel requests and run event logs, in this
 * process's memory. Several `LocalDispatcher`s built on one backend share it, as processes share a Redis.
 * Treat it as opaque: only LocalDispatcher reads and writes it.
 */
export class LocalDispatchBackend {
  /** The clock of the shared state: every time it records is read from it. */
  readonly clock: Clock;
  /** @internal */
  readonly work: LocalWorkQueue;
  /** @internal */
  readonly events: LocalRunEvents;
  /** @internal */
  readonly cancels: LocalCancels;

  constructor(options: LocalDispatchBackendOptions = {}) {
    const { clock = systemClock, ids = systemIds } = options;
    this.clock = clock;
    this.work = new LocalWorkQueue(clock, ids);
    this.events = new LocalRunEvents(clock);
    this.cancels = new LocalCancels(ids);
  }

  /**
   * Takes a live claim away from its holder without telling it, as an engine does when it wrongly judges the
   * holder stalled: the thread goes to the next claim (a duplicate delivery; the holder's `extend`, `complete`, ...
   * then get `claim-lost`). For fault injection (a simulation's); false when the claim is gone.
   */
  revokeClaim(token: string): boolean {
    return this.work.revoke(token, this.clock.now());
  }

  /**
   * A run's log as it is, read without copying and without a dispatcher call (checks made between a simulation's
   * steps): its records, oldest first, and whether it is ended; undefined when the run has none. Records past
   * `maxEventsPerRun` may stay in `records` until the log is compacted (the array is then replaced).
   */
  eventLog(
    runId: string,
  ): { readonly records: readonly RunEventRecord[]; readonly ended: boolean } | undefined {
    return this.events.log(runId);
  }
}
