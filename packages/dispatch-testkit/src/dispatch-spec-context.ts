import type { Dispatcher, DispatchPolicy } from '@lunation/contract';

/** What every spec file receives: a way to open dispatchers for the running test, and the backend's bounds. */
export interface DispatchSpecContext {
  /** A dispatcher on a fresh, empty, isolated backend, with `policy`; closed after the test. */
  open(policy?: DispatchPolicy): Promise<Dispatcher>;
  /** A second dispatcher on the same backend as `dispatcher`, with its policy; closed after the test. */
  openSibling(dispatcher: Dispatcher): Promise<Dispatcher>;
  /** The longest the backend takes to hand a thread to a waiting claimer once it became claimable. */
  readonly redeliveryMs: number;
}
