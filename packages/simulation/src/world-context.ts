import type { Scheduler } from './scheduler.js';
import type { SimulatedDispatcher } from './simulated-dispatcher.js';
import type { SimulatedStore } from './simulated-store.js';
import type { WorkerFaultDraws } from './world-faults.js';
import type { UserJournal } from './world-journal.js';
import type { WorldLedger } from './world-ledger.js';

/** What the actors of the runtime world share: the simulated parts, the world's own records, what went wrong. */
export interface WorldContext {
  scheduler: Scheduler;
  store: SimulatedStore;
  dispatcher: SimulatedDispatcher;
  ledger: WorldLedger;
  journal: UserJournal;
  /** Invariant violations found so far (the first one first). */
  violations: string[];
  /** Things worth a look that break no invariant. */
  findings: Set<string>;
  /** The longest extra time a tool's effect takes (drawn per attempt from the `tool-latency` stream). @default 0 */
  toolDelayMs?: number;
  /**
   * Chance that the model calls a gated or interrupt-kind tool two or three times in one step (drawn per call
   * from the `model-calls` stream). @default 0
   */
  repeatedCalls?: number;
  /** The worker, model and tool faults of the world, drawn through its fault schedule. */
  workerFaults: WorkerFaultDraws;
}
