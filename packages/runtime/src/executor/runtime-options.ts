import type { Clock, EventSink, IdSource, Instrumentation, LunationStore } from '@lunation/contract';
import type { InProcessRetention } from '../persistence.js';
import type { RegistrySet } from '../registry.js';

export interface AgentRuntimeOptions extends RegistrySet {
  /** Durable store; without one, threads live in this process's memory only. */
  store?: LunationStore;
  sinks?: EventSink[];
  /** Thread lease time-to-live; renewed every third of it while the run lives. @default 30000 */
  leaseTtlMs?: number;
  /**
   * Names this runtime in leases (and in `thread-busy` messages, for logs). Replicas may share one: each instance
   * holds its leases under an incarnation id of its own, and the store lets a same-owner lease go only once it
   * went unrenewed for three quarters of `leaseTtlMs`, when its holder no longer counts it held. A runtime started
   * again with the same owner (a restarted server with a stable name) takes its previous life's leases over then,
   * instead of waiting for them to expire. @default `${hostname}:${pid}:<random>`
   */
  owner?: string;
  /** Emit a `state-snapshot` event before every `step-end`. @default false */
  emitStateSnapshots?: boolean;
  /** Without a store: how many threads this process keeps (see `InProcessRetention`). @default all */
  retention?: InProcessRetention;
  /**
   * Observability, e.g. `openTelemetryInstrumentation()` of `@lunation/otel`: told of every run's model calls,
   * tool executions, checkpoints, ledger hits, leases, suspensions and resumes. Without one none of it is built.
   */
  instrumentation?: Instrumentation;
  /**
   * Where the runtime reads time and sets its timers: lease renewals and freshness, run and tool timeouts, retry
   * waits, background tasks, every stored timestamp. A simulation passes a virtual clock. @default systemClock
   */
  clock?: Clock;
  /**
   * Where the runtime's ids (runs, messages, calls, tickets, tasks, the lease incarnation) and random choices
   * come from. A simulation passes a seeded source. @default systemIds
   */
  ids?: IdSource;
}
