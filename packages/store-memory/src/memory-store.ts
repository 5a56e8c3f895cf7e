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
  /** The clock, in epoch milliseconds. @default () => Date.now() */
  now?: () => number;
}

/** The in-memory reference implementation of LunationStore; data lives as long as its backend. */
export class MemoryStore extends CheckedStore {
  declare readonly kind: 'memory';
  /** The data this store reads and writes; pass it to another MemoryStore to share it. */
  readonly backend: MemoryBackend;

  constructor(options: MemoryStoreOptions = {}) {
    const backend = options.backend ?? new MemoryBackend();
    super(new MemoryOperations(backend, options.now ?? (() => Date.now())));
    this.backend = backend;
  }

  /** A new, empty backend that several MemoryStore instances can share. */
  static createBackend(): MemoryBackend {
    return new MemoryBackend();
  }
}
