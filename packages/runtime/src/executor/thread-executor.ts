import { hostname } from 'node:os';
import {
  type Clock,
  type EventSink,
  type IdSource,
  type Instrumentation,
  LunationError,
  type LunationStore,
  type Message,
  type ResumeDecision,
  type RunIdentity,
  systemClock,
  systemIds,
} from '@lunation/contract';
import type { ResolvedAgent } from '../agent.js';
import type { DeliveryMode } from '../loop/inbox.js';
import { InProcessPersistence, type Persistence, StorePersistence } from '../persistence.js';
import { AgentRegistry, type RegistrySnapshot } from '../registry.js';
import { busyHere, ThreadLeases } from '../thread-lease.js';
import { delegateTool } from './delegation.js';
import type { ExecutorCore } from './executor-core.js';
import { LiveRun, observed } from './live-run.js';
import { LiveRuns } from './live-runs.js';
import { decideOn, openRun } from './open-run.js';
import type { RunDispatch } from './run-dispatch.js';
import type { LoadedRun, RunExecutor } from './run-executor.js';
import type {
  DecisionOutcome,
  DecisionTarget,
  RunHandle,
  RunOptions,
  SendDecisionsOptions,
} from './run-options.js';
import type { AgentRuntimeOptions } from './runtime-options.js';
import { LocalTaskHost } from './task-host.js';

/**
 * Executes threads' work in this process: each run opens under its thread's lease (with a store), loads the
 * thread, settles what it waits on and runs the agent loop; it hosts the runs' background tasks and delegate
 * agents. `AgentRuntime` opens its runs on it directly; a fleet's `AgentWorker` runs what it claims from a
 * dispatcher through it, so a thread's work executes one way wherever it was submitted.
 */
export class ThreadExecutor implements ExecutorCore, RunDispatch, RunExecutor {
  readonly registry: AgentRegistry;
  readonly store: LunationStore | undefined;
  readonly owner: string;
  readonly persistence: Persistence;
  readonly local: InProcessPersistence | undefined;
  readonly leases: ThreadLeases | undefined;
  readonly runs = new LiveRuns();
  readonly tasks: LocalTaskHost;
  readonly sinks: EventSink[];
  readonly emitStateSnapshots: boolean;
  readonly instrumentation: Instrumentation | undefined;
  readonly clock: Clock;
  readonly ids: IdSource;
  /** The agent resolver handed to runs of the current registry version. */
  private resolver: { snapshot: RegistrySnapshot; resolve(agentId: string): ResolvedAgent } | undefined;

  constructor(options: AgentRuntimeOptions) {
    this.store = options.store;
    if (options.store && options.retention) {
      throw new LunationError(
        'invalid-argument',
        '`retention` applies to runtimes without a store; a store keeps threads until deleteThread()',
      );
    }
    this.clock = options.clock ?? systemClock;
    this.ids = options.ids ?? systemIds;
    const owner = options.owner ?? `${hostname()}:${process.pid}:${randomSuffix(this.ids)}`;
    this.owner = owner;
    if (options.store) {
      this.persistence = new StorePersistence(options.store);
      this.leases = new ThreadLeases(this.persistence, owner, this, {
        ttlMs: options.leaseTtlMs ?? 30_000,
        instrumentation: options.instrumentation,
      });
    } else {
      const byThread = this.runs.byThread;
      this.local = new InProcessPersistence(
        options.retention,
        (threadId) => byThread.has(threadId),
        this.clock,
      );
      this.persistence = this.local;
    }
    this.sinks = options.sinks ?? [];
    this.emitStateSnapshots = options.emitStateSnapshots ?? false;
    this.instrumentation = options.instrumentation;
    const start = (run: RunOptions) => this.run(run);
    this.tasks = new LocalTaskHost(owner, this.runs, start, this);
    this.registry = new AgentRegistry(
      {
        models: options.models,
        agents: options.agents,
        ...(options.tools ? { tools: options.tools } : {}),
        ...(options.plugins ? { plugins: options.plugins } : {}),
        ...(options.globalPlugins ? { globalPlugins: options.globalPlugins } : {}),
      },
      (delegate, parent) => delegateTool(delegate, parent, this.runs, start),
    );
  }

  open(options: RunOptions, buffer: boolean): RunHandle | Promise<RunHandle> {
    return openRun(this, options, buffer);
  }

  /** Starts (or resumes) a run; its handle's failed result is never an unhandled rejection. */
  async run(options: RunOptions): Promise<RunHandle> {
    return observed(await openRun(this, options, options.stream !== false));
  }

  decide(
    target: DecisionTarget,
    decisions: ResumeDecision[],
    options: SendDecisionsOptions = {},
  ): Promise<DecisionOutcome> {
    return decideOn(this, target, decisions, options);
  }

  async send(id: string, messages: Message[], mode: DeliveryMode): Promise<RunHandle | undefined> {
    const active = this.runs.find(id);
    if (active?.loop) {
      active.loop.deliver(messages, mode);
      return undefined;
    }
    return this.run({ threadId: active?.identity.threadId ?? id, input: messages });
  }

  deliverToRun(runId: string, messages: Message[]): boolean {
    const loop = this.runs.byRun.get(runId)?.loop;
    if (!loop) return false;
    loop.deliver(messages, 'queue');
    return true;
  }

  closeRun(runId: string): void {
    this.runs.byRun.get(runId)?.loop?.close();
  }

  requestCancel(id: string, reason: string): boolean {
    const active = this.runs.find(id);
    if (!active) return false;
    active.controller.abort(reason);
    return true;
  }

  async cancelAll(reason: string): Promise<void> {
    for (const run of this.runs.byRun.values()) run.controller.abort(reason);
    await this.drain();
  }

  async drain(): Promise<void> {
    await Promise.allSettled([...this.runs.byRun.values()].map((run) => run.result));
  }

  activeRun(id: string): RunIdentity | undefined {
    return this.runs.find(id)?.identity;
  }

  activeRuns(): RunIdentity[] {
    return this.runs.identities();
  }

  async deleteThread(threadId: string): Promise<boolean> {
    const active = this.runs.byThread.get(threadId);
    if (active) throw busyHere(threadId, active.identity.runId);
    this.tasks.taken(threadId);
    return this.persistence.deleteThread(threadId);
  }

  get incarnation(): string | undefined {
    return this.leases?.incarnation;
  }

  acquireLease(threadId: string, runId: string): Promise<number | undefined> {
    return this.leases ? this.leases.acquire(threadId, runId) : Promise.resolve(undefined);
  }

  releaseLease(threadId: string, token: number): Promise<void> {
    return this.leases ? this.leases.release(threadId, token) : Promise.resolve();
  }

  loadedRun(handle: RunHandle): LoadedRun | undefined {
    if (!(handle instanceof LiveRun)) return undefined;
    return {
      leaseToken: handle.leaseToken ?? handle.releasedToken,
      messageCount: handle.loadedMessages,
      callRecords: handle.loadedCalls,
    };
  }

  resolverOf(snapshot: RegistrySnapshot): (agentId: string) => ResolvedAgent {
    if (this.resolver?.snapshot !== snapshot) {
      this.resolver = { snapshot, resolve: (agentId) => snapshot.agent(agentId) };
    }
    return this.resolver.resolve;
  }
}

/** Eight random hex digits for a default owner name (`host:pid:xxxxxxxx`), from the runtime's id source. */
function randomSuffix(ids: IdSource): string {
  return Math.floor(ids.random() * 0x1_0000_0000)
    .toString(16)
    .padStart(8, '0');
}
