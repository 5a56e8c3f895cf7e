import {
  type Instrumentation,
  LunationError,
  type Message,
  type ResumeDecision,
  type RunIdentity,
  type RunInstrumentation,
  type RunRecord,
  type TraceCarrier,
} from '@lunation/contract';
import type { ResolvedAgent } from '../agent.js';
import { AgentLoop } from '../loop/agent-loop.js';
import type { FrontendTool } from '../loop/run-scope.js';
import type { LoadedThread } from '../persistence.js';
import type { RegistrySnapshot } from '../registry.js';
import { traceContextKey } from '../runtime-keys.js';
import type { ExecutorCore } from './executor-core.js';
import { ignoreEvent, type LiveRun } from './live-run.js';
import type { RunOptions } from './run-options.js';

const NO_FRONTEND_TOOLS: FrontendTool[] = [];

/**
 * Runs the loop on an opened thread with nothing left to settle: resolves the run's agent and identity, keeps
 * its lease renewed, and the run becomes active until its loop ends.
 */
export function launchRun(
  core: ExecutorCore,
  run: LiveRun,
  options: RunOptions,
  thread: LoadedThread,
  input: Message[],
  previous: RunRecord | undefined,
  decisions: ResumeDecision[],
  snapshot: RegistrySnapshot,
  superseded?: RunRecord,
): LiveRun {
  const { threadId, runId } = run.identity;
  const { tasks, leases } = core;
  const finishedTasks = tasks.waiting(threadId);
  if (
    !previous &&
    input.length === 0 &&
    decisions.length === 0 &&
    !finishedTasks &&
    !options.taskResults?.length
  ) {
    throw new LunationError('invalid-argument', `run() on thread "${threadId}" needs input or decisions`);
  }
  const activeAgent = thread.threadState['runtime.activeAgent'];
  const agentId =
    options.agentId ??
    previous?.identity.agentId ??
    (typeof activeAgent === 'string' && snapshot.hasAgent(activeAgent) ? activeAgent : undefined) ??
    snapshot.firstAgentId;
  if (agentId === undefined) throw new LunationError('invalid-argument', 'The runtime has no agents');
  const agent = snapshot.agent(
    previous && snapshot.hasAgent(previous.identity.agentId) ? previous.identity.agentId : agentId,
  );
  const { parent } = options;
  if (previous) run.identity = previous.identity;
  else if (parent) {
    run.identity = {
      threadId,
      runId,
      agentId: agent.id,
      parentRunId: parent.runId,
      parentToolCallId: parent.toolCallId,
      origin: parent.origin,
    };
  } else run.identity.agentId = agent.id; // the reservation's identity, complete now
  const { identity } = run;
  core.runs.byRun.set(identity.runId, run);
  if (options.signal) run.follow(options.signal);
  const instrumentation = core.instrumentation
    ? startInstrumentation(core.instrumentation, identity, agent, input, previous, run.leaseToken)
    : undefined;
  if (leases && run.leaseToken !== undefined) {
    leases.keep(threadId, run.leaseToken, run.controller, instrumentation);
  }
  const listening = run.listening;
  // Built apart: nested in the options literal it made V8 deep-copy a literal boilerplate in its runtime, per run.
  const runner = { owner: core.owner, incarnation: core.leases?.incarnation };
  const ended = AgentLoop.start(
    {
      identity,
      agent,
      resolveAgent: core.resolverOf(snapshot),
      persistence: core.persistence,
      leaseToken: run.leaseToken,
      leases,
      runner,
      history: thread.messages,
      input,
      threadState: thread.threadState,
      previous,
      decisions,
      superseded,
      frontendTools: options.frontendTools ?? NO_FRONTEND_TOOLS,
      signal: run.controller.signal,
      controller: run.controller,
      emit: listening ? (event) => run.emit(event) : ignoreEvent,
      registryVersion: snapshot.version,
      emitStateSnapshots: core.emitStateSnapshots,
      tasks,
      taskResults: finishedTasks
        ? options.taskResults
          ? [...options.taskResults, ...finishedTasks]
          : finishedTasks
        : options.taskResults,
      listening,
      keepAlive: options.keepAlive,
      onTurnEnd: options.onTurnEnd,
      output: options.output,
      instrumentation,
    },
    (loop) => {
      // The loop has the results now; taken only here, so a run that fails to start leaves them for the next.
      if (finishedTasks) tasks.taken(threadId);
      run.loop = loop;
    },
  );
  run.result = ended.then(
    (result) => {
      const releasing = core.runs.release(run, leases);
      return releasing ? releasing.then(() => result) : result;
    },
    (error: unknown) => {
      const releasing = core.runs.release(run, leases);
      if (!releasing) throw error;
      return releasing.then(() => Promise.reject(error));
    },
  );
  return run;
}

/** The run's observer from the runtime's instrumentation (an instrumentation that throws observes nothing). */
function startInstrumentation(
  instrumentation: Instrumentation,
  identity: RunIdentity,
  agent: ResolvedAgent,
  input: Message[],
  previous: RunRecord | undefined,
  leaseToken: number | undefined,
): RunInstrumentation | undefined {
  const suspendedBy = previous?.state[traceContextKey.name] as TraceCarrier | null | undefined;
  const { description } = agent.definition;
  try {
    return instrumentation.runStarted({
      identity,
      provider: agent.model.provider,
      model: agent.model.modelId,
      ...(description === undefined ? {} : { description }),
      resumed: previous !== undefined,
      ...(suspendedBy ? { suspendedBy } : {}),
      input,
      ...(leaseToken === undefined
        ? {}
        : { lease: { token: leaseToken, takeover: previous?.status === 'running' } }),
    });
  } catch {
    return undefined;
  }
}
