import { type Clock, systemClock } from '@lunation/contract';
import { CheckedStore } from '@lunation/contract/store-utils';
import { MemoryBackend } from './memory-backend.js';
import { MemoryOperations } from './memory-operations.js';

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * The data to use. Give two stores the same backend (`MemoryStore.createBackend()`) and they share it, as
   * two processes share one database. @default a new backend private to this store
   */
  backend?: MemoryBackend;
  /**
   * Where the store reads the times it records and judges leases by (timestamps, lease expiries); a simulation
   * passes a virtual clock. @default systemClock
   */
  clock?: Clock;
  /** The time in epoch milliseconds, read instead of `clock.now()`. @deprecated pass `clock` */
  now?: () => number;
}

/** The in-memory reference implementation of LunationStore; data lives as long as its backend. */
export class MemoryStore extends CheckedStore {
  declare readonly kind: 'memory';
  /** The data this store reads and writes; pass it to another MemoryStore to share it. */
  readonly backend: MemoryBackend;

  constructor(options: MemoryStoreOptions = {}) {
    const backend = options.backend ?? new MemoryBackend();
    const clock = options.clock ?? systemClock;
    super(new MemoryOperations(backend, options.now ?? (() => clock.now())));
    this.backend = backend;
  }

  /** A new, empty backend that several MemoryStore instances can share. */
  static createBackend(): MemoryBackend {
    return new MemoryBackend();
  }
}
