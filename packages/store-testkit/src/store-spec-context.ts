import type { LunationStore } from '@lunation/contract';

/** What every spec file receives: the store of the running test and a way to open siblings of it. */
export interface StoreSpecContext {
  /** The fresh store of the running test (only valid inside a test or hook). */
  readonly store: LunationStore;
  /** True when the backend can have a second instance (`createSibling` was given). */
  readonly hasSiblings: boolean;
  /** Opens a second instance on the same backend as `store`; closed with `close()` after the test. */
  openSibling(): Promise<LunationStore>;
}
