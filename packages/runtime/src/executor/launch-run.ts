import {
  type Instrumentation,
  LunationError,
  type RunIdentity,
  type RunInstrumentation,
  type TraceCarrier,
} from '@lunation/contract';
import type { ResolvedAgent } from '../agent.js';
import type { TaskRecord } from '../background-tasks.js';
import { AgentLoop } from '../loop/agent-loop.js';
import { type ToolCallRecord, toolCallsKey } from '../loop/call-records.js';
import type { FrontendTool, RunLoopOptions } from '../loop/run-scope.js';
import { traceContextKey } from '../runtime-keys.js';
import type { ExecutorCore } from './executor-core.js';
import { ignoreEvent, type LiveRun } from './live-run.js';
import type { LoadedOpening } from './opening.js';

// Stage "launch": the run's agent and final identity resolved, its lease kept renewed, and its loop started;
// the run is active until its loop ends.

const NO_FRONTEND_TOOLS: FrontendTool[] = [];

/** Runs the loop of an opening with nothing left to settle; the run, now active. */
export function launchRun(core: ExecutorCore, opening: LoadedOpening): LiveRun {
  const { run, request, thread, leaseToken } = opening;
  const { tasks, leases } = core;
  const { threadId } = run.identity;
  const finishedTasks = tasks.waiting(threadId);
  if (!opening.previous && !opening.input.length && !opening.decisions.length && !finishedTasks) {
    if (!request.taskResults?.length) {
      throw new LunationError('invalid-argument', `run() on thread "${threadId}" needs input or decisions`);
    }
  }
  const agent = agentOf(opening);
  run.start({
    identity: identityOf(opening, agent),
    leaseToken,
    loadedMessages: thread.messages.length,
    loadedCalls: thread.threadState[toolCallsKey.name] as Record<string, ToolCallRecord> | undefined,
  });
  const { identity } = run;
  core.runs.byRun.set(identity.runId, run);
  if (request.signal) run.follow(request.signal);
  const instrumentation = core.instrumentation
    ? startInstrumentation(core.instrumentation, opening, identity, agent)
    : undefined;
  if (leases && leaseToken !== undefined) leases.keep(threadId, leaseToken, run.controller, instrumentation);
  const launch: Launch = { agent, instrumentation, finishedTasks };
  const ended = AgentLoop.start(loopOptions(core, opening, launch), (loop) => {
    // The loop has the results now; taken only here, so a run that fails to start leaves them for the next.
    if (finishedTasks) tasks.taken(threadId);
    run.loop = loop;
  });
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

/** The agent that runs: the continued run's (while registered), else the request's, the thread's active one, or the first. */
function agentOf({ request, previous, thread, snapshot }: LoadedOpening): ResolvedAgent {
  const activeAgent = thread.threadState['runtime.activeAgent'];
  const agentId =
    request.agentId ??
    previous?.identity.agentId ??
    (typeof activeAgent === 'string' && snapshot.hasAgent(activeAgent) ? activeAgent : undefined) ??
    snapshot.firstAgentId;
  if (agentId === undefined) throw new LunationError('invalid-argument', 'The runtime has no agents');
  return snapshot.agent(
    previous && snapshot.hasAgent(previous.identity.agentId) ? previous.identity.agentId : agentId,
  );
}

/** The run's final identity: the continued run's, else the reservation's with its agent (and parent). */
function identityOf({ run, request, previous }: LoadedOpening, agent: ResolvedAgent): RunIdentity {
  if (previous) return previous.identity;
  const { threadId, runId } = run.identity;
  const { parent } = request;
  if (!parent) return { ...run.identity, agentId: agent.id };
  return {
    threadId,
    runId,
    agentId: agent.id,
    parentRunId: parent.runId,
    parentToolCallId: parent.toolCallId,
    origin: parent.origin,
  };
}

/** What the launch resolved for the loop: its agent, its observer, and the background results it takes. */
interface Launch {
  agent: ResolvedAgent;
  instrumentation: RunInstrumentation | undefined;
  finishedTasks: TaskRecord[] | undefined;
}

/** What the run's loop starts from. */
function loopOptions(core: ExecutorCore, opening: LoadedOpening, launch: Launch): RunLoopOptions {
  const { run, request, thread, snapshot, leaseToken, previous, decisions, input } = opening;
  const { tasks, leases } = core;
  const { agent, instrumentation, finishedTasks } = launch;
  const listening = run.listening;
  // Built apart: nested in the options literal it made V8 deep-copy a literal boilerplate in its runtime, per run.
  const runner = { owner: core.owner, incarnation: leases?.incarnation };
  return {
    identity: run.identity,
    agent,
    resolveAgent: core.resolverOf(snapshot),
    persistence: core.persistence,
    leaseToken,
    leases,
    runner,
    history: thread.messages,
    input,
    threadState: thread.threadState,
    previous,
    decisions,
    superseded: opening.superseded,
    frontendTools: request.frontendTools ?? NO_FRONTEND_TOOLS,
    signal: run.controller.signal,
    controller: run.controller,
    emit: listening ? (event) => run.emit(event) : ignoreEvent,
    registryVersion: snapshot.version,
    emitStateSnapshots: core.emitStateSnapshots,
    tasks,
    taskResults: finishedTasks
      ? request.taskResults
        ? [...request.taskResults, ...finishedTasks]
        : finishedTasks
      : request.taskResults,
    listening,
    keepAlive: request.keepAlive,
    onTurnEnd: request.onTurnEnd,
    output: request.output,
    instrumentation,
    latestCreatedAt: thread.latestRun?.createdAt,
    clock: core.clock,
    ids: core.ids,
  };
}

/** The run's observer from the runtime's instrumentation (an instrumentation that throws observes nothing). */
function startInstrumentation(
  instrumentation: Instrumentation,
  { previous, input, leaseToken }: LoadedOpening,
  identity: RunIdentity,
  agent: ResolvedAgent,
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
