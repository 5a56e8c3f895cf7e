import type { EventSink, Instrumentation } from '@lunation/contract';
import type { ResolvedAgent } from '../agent.js';
import type { InProcessPersistence, Persistence } from '../persistence.js';
import type { AgentRegistry, RegistrySnapshot } from '../registry.js';
import type { ThreadLeases } from '../thread-lease.js';
import type { LiveRuns } from './live-runs.js';
import type { Seams } from './seams.js';
import type { LocalTaskHost } from './task-host.js';

/** What the stages of a run (opening it, launching its loop) share: the executor's parts. */
export interface ExecutorCore extends Seams {
  readonly registry: AgentRegistry;
  /** Names this executor in leases and in the run journal (`AgentRuntimeOptions.owner`). */
  readonly owner: string;
  readonly persistence: Persistence;
  /** The same persistence when it is this process's memory: runs then open threads without a promise. */
  readonly local: InProcessPersistence | undefined;
  /** Leases of the executor's runs; none without a store (the live runs suffice in one process). */
  readonly leases: ThreadLeases | undefined;
  readonly runs: LiveRuns;
  readonly tasks: LocalTaskHost;
  readonly sinks: EventSink[];
  readonly emitStateSnapshots: boolean;
  readonly instrumentation: Instrumentation | undefined;
  /** `snapshot.agent` as a function, made once per registry version. */
  resolverOf(snapshot: RegistrySnapshot): (agentId: string) => ResolvedAgent;
}
