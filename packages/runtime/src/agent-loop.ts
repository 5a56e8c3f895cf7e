import {
  type AgentEvent,
  type AssistantMessage,
  addUsage,
  type ContentPart,
  emptyUsage,
  type JsonSchema,
  type JsonValue,
  LunationError,
  type Message,
  type ModelRequest,
  type ResumeDecision,
  type RunIdentity,
  type RunRecord,
  type RunStatus,
  type StopReason,
  type SuspensionTicket,
  statusForTermination,
  type TerminationReason,
  type ToolCall,
  type ToolDescriptor,
  type ToolExecution,
  type ToolMessage,
  type ToolResult,
  type ToolResultPart,
  toErrorInfo,
  type Usage,
} from '@lunation/contract';
import type { ResolvedAgent, StepStats, ToolErrorPolicy } from './agent.js';
import {
  type BackgroundTasks,
  type TaskHost,
  type TaskRecord,
  taskMessageText,
  tasksKey,
} from './background-tasks.js';
import type { Command } from './command.js';
import {
  applyCompaction,
  DEFAULT_COMPACTION_PROMPT,
  estimateTokens,
  summaryRange,
  truncateMessages,
} from './context-policy.js';
import { createId } from './id.js';
import type { Persistence } from './persistence.js';
import { type PhaseContextBase, PhaseEngine } from './phase-engine.js';
import type { AgentView, ModelResponse, Plugin, RequestDraft, ToolGateDecision } from './plugin.js';
import {
  activeAgentKey,
  appliedDecisionsKey,
  type PendingCall,
  pendingCallsKey,
  type RunProgress,
  requestAdjustmentsKey,
  runProgressKey,
} from './runtime-keys.js';
import { type StateSnapshot, StateStore, type StateUpdate } from './state.js';
import { formatIssues, type TicketInput, type ToolContext, ToolOutput, toJsonSchema } from './tool.js';

/** A tool executed by the caller's client: the model sees the descriptor; a call suspends for its result. */
export interface FrontendTool extends ToolDescriptor {
  /** JSON Schema the client's result (the decision payload) must satisfy. */
  responseSchema?: JsonSchema;
}

/** Everything one run needs; assembled by AgentRuntime. */
export interface RunLoopOptions {
  identity: RunIdentity;
  agent: ResolvedAgent;
  /** The agent for an id (after a handoff). */
  resolveAgent(agentId: string): ResolvedAgent;
  persistence: Persistence;
  leaseToken: number | undefined;
  /** The thread's committed messages. */
  history: Message[];
  /** New input messages of this run. */
  input: Message[];
  threadState: Record<string, unknown>;
  /** The run record being continued (resume after suspension, or recovery after a crash). */
  previous: RunRecord | undefined;
  /** Validated decisions for open tickets. */
  decisions: ResumeDecision[];
  /** Cancel open tickets: the input supersedes them. */
  supersede: boolean;
  frontendTools: FrontendTool[];
  signal: AbortSignal;
  /** Delivers one event to the run's listeners. */
  emit(event: AgentEvent): void;
  registryVersion: number | undefined;
  emitStateSnapshots: boolean;
  /** Live background tasks of this process. */
  tasks?: TaskHost;
  /** Results of background tasks that finished while no run was active. */
  taskResults?: TaskRecord[];
  /** False when nobody consumes events: the loop then skips building them. @default true */
  listening?: boolean;
  /** Stay open after a reply and wait for more input (a session), until `close()`. */
  keepAlive?: boolean;
  /** Called each time a kept-alive run has answered and waits for input. */
  onTurnEnd?(turn: { finalText: string; steps: number; usage: Usage }): void;
}

/** How follow-up input joins a live run. */
export type DeliveryMode = 'queue' | 'steer' | 'interrupt';

type InboxItem =
  | { kind: 'messages'; messages: Message[]; mode: DeliveryMode }
  | { kind: 'task'; task: TaskRecord };

/** What a run ended with. */
export interface RunResult {
  identity: RunIdentity;
  status: RunStatus;
  termination: TerminationReason;
  finalText: string;
  steps: number;
  usage: Usage;
  openTickets: SuspensionTicket[];
  /** Messages this run added to the thread. */
  messages: Message[];
}

interface PreparedCall {
  call: ToolCall;
  input: unknown;
  /** Set when the call is already settled (invalid, unknown, gated, decided). */
  result?: ToolResult;
  status?: 'succeeded' | 'failed' | 'cancelled';
  suspend?: TicketInput;
  decision?: ResumeDecision;
  /** Execute through the ledger (begin may find a completed or in-flight entry). */
  ledgerChecked?: boolean;
}

const INTERRUPTED: ToolResult = {
  status: 'error',
  message: 'Tool execution was interrupted: an earlier call in this step was blocked.',
};

function parseArguments(raw: string): { ok: true; value: unknown } | { ok: false; message: string } {
  if (raw.trim() === '') return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(raw) };
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
}

/** One run of the agent loop: RunStart → [StepStart … StepEnd]* → RunEnd. */
export class AgentLoop {
  private agent: ResolvedAgent;
  private engine: PhaseEngine;
  private readonly state: StateStore;
  private readonly messages: Message[];
  private committedCount: number;
  private readonly runMessages: Message[] = [];
  private seq = 0;
  private progress: RunProgress;
  private lastThreadRevision = -1;
  /** Whether the store already has this run's record. */
  private runWritten: boolean;
  private readonly createdAt: number;
  private finalText = '';
  private stepToolsCalled: string[] = [];
  private lastStopReason: StopReason | undefined;
  private agentView: AgentView;
  private pendingLedger: Array<{ toolCallId: string; result: ToolResult; execution: ToolExecution }> = [];
  private inbox: InboxItem[] = [];
  private inferenceAbort!: AbortController;
  private inferenceSignal!: AbortSignal;
  private inferring = false;
  private interrupted = false;
  private idleWake: (() => void) | undefined;
  private closed = false;
  private toolErrorStop: string | undefined;

  /** Whether anyone receives events (a buffered stream, a sink or a callback); if not, none are built. */
  private readonly listening: boolean;

  constructor(private readonly options: RunLoopOptions) {
    this.listening = options.listening ?? true;
    this.agent = options.agent;
    this.state = new StateStore(this.agent.plugins.keys.values());
    this.state.restore(options.threadState);
    if (options.previous) this.state.restore(options.previous.state);
    this.lastThreadRevision = this.state.threadRevision;
    this.engine = this.createEngine();
    this.messages = options.history;
    this.committedCount = options.history.length;
    this.runWritten = options.previous !== undefined;
    this.createdAt = options.previous?.createdAt ?? Date.now();
    this.progress = {
      step: options.previous?.steps ?? 0,
      usage: options.previous?.usage ?? emptyUsage(),
      consecutiveToolErrors: 0,
      startedAt: Date.now(),
    };
    this.agentView = this.createAgentView();
    this.resetInferenceSignal();
    options.signal.addEventListener(
      'abort',
      () => {
        this.inferenceAbort.abort(options.signal.reason);
        this.idleWake?.();
      },
      { once: true },
    );
    for (const task of options.taskResults ?? []) this.inbox.push({ kind: 'task', task });
    this.reconcileTasks();
  }

  /** Model calls get their own abort signal so that `interrupt` input can stop one without ending the run. */
  private resetInferenceSignal(): void {
    const controller = new AbortController();
    this.inferenceAbort = controller;
    this.inferenceSignal = controller.signal;
  }

  /** Adds input to the live run: delivered at the next step boundary, before the next model call. */
  deliver(messages: Message[], mode: DeliveryMode): void {
    this.inbox.push({ kind: 'messages', messages, mode });
    if (mode === 'interrupt' && this.inferring) {
      this.interrupted = true;
      this.inferenceAbort.abort('interrupted by new input');
    }
    this.idleWake?.();
  }

  /** A background task of this thread finished. */
  deliverTask(task: TaskRecord): void {
    this.inbox.push({ kind: 'task', task });
    this.idleWake?.();
  }

  /** Ends a kept-alive run once it is idle. */
  close(): void {
    this.closed = true;
    this.idleWake?.();
  }

  /** Tasks recorded as running that no live process of ours runs any more are reported failed. */
  private reconcileTasks(): void {
    if (!this.state.isRegistered(tasksKey) || !this.state.written(tasksKey)) return;
    const delivered = new Set((this.options.taskResults ?? []).map((task) => task.id));
    for (const task of Object.values(this.state.peek(tasksKey))) {
      if (task.status !== 'running' || delivered.has(task.id) || this.options.tasks?.isLive(task.id))
        continue;
      this.inbox.push({
        kind: 'task',
        task: {
          ...task,
          status: 'failed',
          finishedAt: Date.now(),
          error: `the process running it (${task.owner}) stopped before it finished`,
        },
      });
    }
  }

  /** Moves everything in the inbox into the conversation. True when anything arrived. */
  private drainInbox(): boolean {
    if (this.inbox.length === 0) return false;
    const items = this.inbox;
    this.inbox = [];
    for (const item of items) {
      if (item.kind === 'task') {
        if (this.state.isRegistered(tasksKey)) this.state.commit([{ key: tasksKey, update: item.task }]);
        this.append({
          id: createId(),
          role: 'user',
          content: [{ type: 'text', text: taskMessageText(item.task) }],
          metadata: { taskId: item.task.id, visibility: 'internal', runId: this.options.identity.runId },
        });
        continue;
      }
      if (item.mode === 'steer') {
        this.append({
          id: createId(),
          role: 'user',
          content: [
            {
              type: 'text',
              text: '[The user interjected while you were working. Take their new message into account before continuing.]',
            },
          ],
          metadata: { visibility: 'internal', interjection: true },
        });
      }
      for (const message of item.messages) this.append(message);
    }
    return true;
  }

  private pendingTasks(): TaskRecord[] {
    if (!this.state.isRegistered(tasksKey)) return [];
    return Object.values(this.state.peek(tasksKey)).filter((task) => task.status === 'running');
  }

  /** Resolves when input arrives, the run is closed or cancelled. */
  private waitForInput(): Promise<void> {
    if (this.inbox.length > 0 || this.closed || this.options.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      this.idleWake = () => {
        this.idleWake = undefined;
        resolve();
      };
    });
  }

  private createEngine(): PhaseEngine {
    return new PhaseEngine(this.agent.plugins, this.state, (error) =>
      this.emit({ type: 'error', error: toErrorInfo(error) }),
    );
  }

  private createAgentView(): AgentView {
    const agent = this.agent;
    return {
      id: agent.id,
      systemPrompt: agent.definition.systemPrompt,
      config: <Config>(plugin: Plugin<Config> | string) =>
        agent.plugins.configs.get(typeof plugin === 'string' ? plugin : plugin.name) as Config,
    };
  }

  /** @internal */
  emit(event: Record<string, unknown> & { type: AgentEvent['type'] }): void {
    const target = event as unknown as { identity: RunIdentity; seq: number };
    target.identity = this.options.identity;
    target.seq = this.seq++;
    this.options.emit(event as unknown as AgentEvent);
  }

  private base(
    response?: ModelResponse,
    toolCall?: PhaseContextBase['toolCall'],
    toolResult?: ToolResult,
    decision?: ResumeDecision,
  ): PhaseContextBase {
    return {
      decision,
      identity: this.options.identity,
      messages: this.messages,
      agent: this.agentView,
      step: this.progress.step,
      signal: this.options.signal,
      response,
      toolCall,
      toolResult,
    };
  }

  /** Runs the loop to the end and resolves with the result. */
  async execute(): Promise<RunResult> {
    const { options } = this;
    if (this.listening)
      this.emit({
        type: 'run-start',
        input: options.input,
        resumed: options.previous !== undefined,
        timestamp: Date.now(),
      });
    let termination: TerminationReason | undefined;
    try {
      this.state.commit([{ key: runProgressKey, update: { ...this.progress } }]);
      if (this.engine.isActive('RunStart')) await this.engine.run('RunStart', this.base());
      termination = await this.settlePendingCalls();
      for (const message of options.input) this.append(message);
      while (termination === undefined) termination = await this.step();
    } catch (error) {
      termination = this.terminationFor(error);
    }
    return this.finish(termination);
  }

  private terminationFor(error: unknown): TerminationReason {
    if (this.options.signal.aborted || LunationError.hasCode(error, 'cancelled')) {
      return { type: 'cancelled', reason: abortReason(this.options.signal) };
    }
    const info = toErrorInfo(error);
    if (this.listening) this.emit({ type: 'error', error: info });
    return { type: 'error', error: info };
  }

  private append(message: Message): void {
    this.messages.push(message);
    this.runMessages.push(message);
  }

  /** Results for the calls of the last assistant message that have none (suspended, or cut off by a crash). */
  private async settlePendingCalls(): Promise<TerminationReason | undefined> {
    const calls = unansweredCalls(this.messages);
    if (calls.length === 0) return undefined;
    const pending = this.state.peek(pendingCallsKey);
    const byCall = new Map<string, PendingCall>();
    for (const entry of Object.values(pending)) byCall.set(entry.ticket.toolCallId, entry);
    const decisions = new Map(this.options.decisions.map((decision) => [decision.ticketId, decision]));
    const prepared: PreparedCall[] = [];
    const settledTickets: string[] = [];
    const appliedDecisionIds: string[] = [];
    for (const call of calls) {
      const entry = byCall.get(call.toolCallId);
      const parsed = parseArguments(call.arguments);
      const item: PreparedCall = { call, input: parsed.ok ? parsed.value : undefined };
      if (!entry) {
        if (this.options.previous?.status === 'running') {
          // The process died while this call ran: run it again through the ledger.
          item.ledgerChecked = true;
          prepared.push(this.validate(item));
        } else {
          // A finished run left it unanswered: never run it behind the user's back.
          item.result = cancelledResult('the run ended before this call finished');
          item.status = 'cancelled';
          prepared.push(item);
        }
        continue;
      }
      const decision = decisions.get(entry.ticket.id) ?? entry.decision;
      if (this.options.supersede && !decision) {
        item.result = {
          status: 'error',
          message: `Cancelled: the user sent a new message instead of answering "${entry.ticket.message}".`,
          metadata: { superseded: true },
        };
        item.status = 'cancelled';
      } else if (!decision) {
        continue;
      } else {
        appliedDecisionIds.push(decision.decisionId);
        if (this.listening) this.emit({ type: 'tool-call-resumed', toolCallId: call.toolCallId, decision });
        if (decision.action === 'cancel') {
          item.result = {
            status: 'error',
            message: `The user declined this call${decision.reason ? `: ${decision.reason}` : '.'}`,
            metadata: { declined: true },
          };
          item.status = 'cancelled';
        } else if (entry.ticket.resumeMode === 'use-decision-as-result') {
          item.result = {
            status: 'success',
            ...(decision.payload === undefined ? {} : { data: decision.payload }),
          };
          item.status = 'succeeded';
        } else {
          item.decision = decision;
          item.ledgerChecked = true;
          this.validate(item);
        }
      }
      settledTickets.push(entry.ticket.id);
      prepared.push(item);
    }
    const updates: StateUpdate[] = [];
    if (settledTickets.length > 0)
      updates.push({ key: pendingCallsKey, update: { type: 'clear', ticketIds: settledTickets } });
    if (appliedDecisionIds.length > 0) updates.push({ key: appliedDecisionsKey, update: appliedDecisionIds });
    if (updates.length > 0) this.state.commit(updates);
    const outcome = await this.executeCalls(prepared);
    if (outcome.blocked) return { type: 'blocked', reason: outcome.blocked };
    if (this.openTickets().length > 0) return { type: 'suspended' };
    return undefined;
  }

  private async step(): Promise<TerminationReason | undefined> {
    const { signal } = this.options;
    if (signal.aborted) return { type: 'cancelled', reason: abortReason(signal) };
    this.switchAgentIfHandedOff();
    this.drainInbox();
    this.progress.step++;
    this.stepToolsCalled = [];
    const step = this.progress.step;
    if (this.listening) this.emit({ type: 'step-start', step });
    if (this.engine.isActive('StepStart')) await this.engine.run('StepStart', this.base());
    if (this.engine.isActive('BeforeInference')) await this.engine.run('BeforeInference', this.base());
    if (signal.aborted) return { type: 'cancelled', reason: abortReason(signal) };
    await this.compactIfNeeded();
    const request = this.buildRequest();
    let response: ModelResponse;
    try {
      response = await this.infer(request);
    } catch (error) {
      if (!this.interrupted || signal.aborted) throw error;
      // New input interrupted the model call: drop the partial answer and continue with the input.
      this.interrupted = false;
      this.resetInferenceSignal();
      this.emitStepEnd();
      return undefined;
    }
    if (signal.aborted) return { type: 'cancelled', reason: abortReason(signal) };
    this.append(response.message);
    this.finalText = response.text;
    this.lastStopReason = response.stopReason;
    if (this.engine.isActive('AfterInference')) await this.engine.run('AfterInference', this.base(response));
    if (signal.aborted) return { type: 'cancelled', reason: abortReason(signal) };

    let termination: TerminationReason | undefined;
    if (response.toolCalls.length > 0) {
      const prepared =
        this.agent.plugins.gates.length > 0 ? await this.gate(response) : this.prepareCalls(response);
      if (this.options.persistence.durable) await this.checkpointBeforeTools(prepared);
      const outcome = await this.executeCalls(prepared, response);
      if (signal.aborted) termination = { type: 'cancelled', reason: abortReason(signal) };
      else if (outcome.blocked) termination = { type: 'blocked', reason: outcome.blocked };
      else if (this.openTickets().length > 0) termination = { type: 'suspended' };
      else if (this.toolErrorStop !== undefined)
        termination = { type: 'stopped', code: 'tool-error', detail: this.toolErrorStop };
    } else {
      termination = { type: 'natural-end' };
    }
    if (this.engine.isActive('StepEnd')) await this.engine.run('StepEnd', this.base(response));
    if (termination === undefined) termination = this.evaluateStopConditions();
    if (termination?.type === 'natural-end') termination = await this.afterReply();
    this.state.commit([{ key: runProgressKey, update: { ...this.progress } }]);
    if (termination === undefined) {
      if (this.options.persistence.durable) await this.checkpoint('running', undefined);
      this.emitStepEnd();
    }
    return termination;
  }

  /** The model answered without tool calls: continue with new input, wait for it, or end. */
  private async afterReply(): Promise<TerminationReason | undefined> {
    if (this.inbox.length > 0) return undefined;
    if (this.options.keepAlive && !this.closed) {
      this.state.commit([{ key: runProgressKey, update: { ...this.progress } }]);
      if (this.options.persistence.durable) await this.checkpoint('running', undefined);
      this.emitStepEnd();
      this.options.onTurnEnd?.({
        finalText: this.finalText,
        steps: this.progress.step,
        usage: this.progress.usage,
      });
      await this.waitForInput();
      if (this.options.signal.aborted) return { type: 'cancelled', reason: abortReason(this.options.signal) };
      if (this.inbox.length > 0) return undefined;
      return { type: 'natural-end' };
    }
    if (this.pendingTasks().length > 0) return { type: 'awaiting-tasks' };
    return { type: 'natural-end' };
  }

  private emitStepEnd(): void {
    if (this.options.emitStateSnapshots) {
      const snapshot = this.state.snapshot();
      if (this.listening)
        this.emit({
          type: 'state-snapshot',
          revision: snapshot.revision,
          state: { ...snapshot.export('thread'), ...snapshot.export('run') },
        });
    }
    if (this.listening)
      this.emit({
        type: 'step-end',
        step: this.progress.step,
        stopReason: this.lastStopReason,
        usage: this.progress.usage,
      });
  }

  private switchAgentIfHandedOff(): void {
    const active = this.state.peek(activeAgentKey);
    if (active === null || active === this.agent.id) return;
    this.agent = this.options.resolveAgent(active);
    for (const key of this.agent.plugins.keys.values()) {
      if (!this.state.isRegistered(key)) this.state.register(key);
    }
    this.engine = this.createEngine();
    this.agentView = this.createAgentView();
  }

  private evaluateStopConditions(): TerminationReason | undefined {
    const { agent, progress } = this;
    if (agent.maxRounds > 0 && progress.step >= agent.maxRounds) {
      return { type: 'stopped', code: 'max-rounds', detail: `reached ${agent.maxRounds} rounds` };
    }
    const conditions = agent.definition.stopConditions;
    if (!conditions || conditions.length === 0) return undefined;
    const stats: StepStats = {
      step: progress.step,
      usage: progress.usage,
      elapsedMs: Date.now() - progress.startedAt,
      consecutiveToolErrors: progress.consecutiveToolErrors,
      toolsCalled: this.stepToolsCalled,
    };
    for (const condition of conditions) {
      switch (condition.type) {
        case 'token-budget':
          if (stats.usage.inputTokens + stats.usage.outputTokens >= condition.maxTokens) {
            return {
              type: 'stopped',
              code: 'token-budget',
              detail: `used ${stats.usage.inputTokens + stats.usage.outputTokens} of ${condition.maxTokens} tokens`,
            };
          }
          break;
        case 'timeout':
          if (stats.elapsedMs >= condition.ms)
            return { type: 'stopped', code: 'timeout', detail: `ran ${stats.elapsedMs} ms` };
          break;
        case 'consecutive-tool-errors':
          if (stats.consecutiveToolErrors >= condition.max) {
            return {
              type: 'stopped',
              code: 'consecutive-tool-errors',
              detail: `${stats.consecutiveToolErrors} tool errors in a row`,
            };
          }
          break;
        case 'tool-called':
          if (stats.toolsCalled.includes(condition.toolName)) {
            return { type: 'stopped', code: 'tool-called', detail: `called ${condition.toolName}` };
          }
          break;
        case 'custom':
          if (condition.check(stats)) return { type: 'stopped', code: condition.code };
          break;
      }
    }
    return undefined;
  }

  private buildRequest(): ModelRequest {
    const { agent } = this;
    const adjustments = this.state.written(requestAdjustmentsKey)
      ? this.state.peek(requestAdjustmentsKey)
      : undefined;
    const policy = agent.definition.context;
    let history: Message[] = policy?.compaction ? applyCompaction(this.messages) : this.messages.slice();
    if (policy?.maxTokens !== undefined) history = truncateMessages(history, policy);
    const messages: Message[] = [];
    if (agent.definition.systemPrompt) {
      messages.push({
        id: `system:${agent.id}`,
        role: 'system',
        content: [{ type: 'text', text: agent.definition.systemPrompt }],
      });
    }
    let tools: ToolDescriptor[] = agent.descriptors as ToolDescriptor[];
    if (this.options.frontendTools.length > 0) tools = [...tools, ...this.options.frontendTools];
    let overrides = agent.definition.overrides ?? {};
    if (adjustments) {
      for (const context of adjustments.contextMessages) {
        if ((context.position ?? 'end') === 'system')
          messages.push(contextMessage(context.key, context.role, context.text));
      }
      messages.push(...history);
      for (const context of adjustments.contextMessages) {
        if ((context.position ?? 'end') === 'end')
          messages.push(contextMessage(context.key, context.role, context.text));
      }
      if (adjustments.excludedTools.length > 0)
        tools = tools.filter((tool) => !adjustments.excludedTools.includes(tool.name));
      if (adjustments.onlyTools) tools = tools.filter((tool) => adjustments.onlyTools?.includes(tool.name));
      overrides = { ...overrides, ...adjustments.overrides };
      this.state.commit([{ key: requestAdjustmentsKey, update: { type: 'reset' } }]);
    } else {
      for (const message of history) messages.push(message);
    }
    const transforms = agent.plugins.transforms;
    if (transforms.length === 0) return { messages, tools, overrides };
    let draft: RequestDraft = { messages, tools, overrides };
    for (const transform of transforms)
      draft = transform(draft, { identity: this.options.identity, step: this.progress.step });
    return { messages: draft.messages, tools: draft.tools, overrides: draft.overrides };
  }

  private async infer(request: ModelRequest): Promise<ModelResponse> {
    const step = this.progress.step;
    // Parts in stream order; each signed (or redacted) reasoning block stays its own part.
    const content: AssistantMessage['content'] = [];
    let openText: { type: 'text'; text: string } | undefined;
    let openReasoning:
      | { type: 'reasoning'; text: string; signature?: string; redacted?: boolean }
      | undefined;
    let text = '';
    const calls = new Map<string, { toolName: string; arguments: string }>();
    const toolCalls: ToolCall[] = [];
    let usage: Usage = emptyUsage();
    let stopReason: StopReason | undefined;
    this.inferring = true;
    try {
      for await (const part of this.agent.model.stream(request, { signal: this.inferenceSignal })) {
        switch (part.type) {
          case 'text-delta':
            text += part.delta;
            if (openText) openText.text += part.delta;
            else {
              openText = { type: 'text', text: part.delta };
              content.push(openText);
            }
            openReasoning = undefined;
            if (this.listening) this.emit({ type: 'text-delta', step, delta: part.delta });
            break;
          case 'reasoning-delta':
            if (!openReasoning) {
              openReasoning = { type: 'reasoning', text: '' };
              content.push(openReasoning);
            }
            openText = undefined;
            openReasoning.text += part.delta;
            if (part.redacted) openReasoning.redacted = true;
            if (part.signature !== undefined || part.redacted) {
              if (part.signature !== undefined) openReasoning.signature = part.signature;
              openReasoning = undefined; // a signature or redaction closes the block
            }
            if (part.delta && this.listening) this.emit({ type: 'reasoning-delta', step, delta: part.delta });
            break;
          case 'tool-call-start':
            calls.set(part.toolCallId, { toolName: part.toolName, arguments: '' });
            if (this.listening) {
              this.emit({
                type: 'tool-call-start',
                step,
                toolCallId: part.toolCallId,
                toolName: part.toolName,
              });
            }
            break;
          case 'tool-call-delta': {
            const call = calls.get(part.toolCallId);
            if (call) call.arguments += part.argumentsDelta;
            if (this.listening) {
              this.emit({
                type: 'tool-call-delta',
                step,
                toolCallId: part.toolCallId,
                argumentsDelta: part.argumentsDelta,
              });
            }
            break;
          }
          case 'tool-call-end': {
            calls.delete(part.toolCallId);
            const call: ToolCall = {
              toolCallId: part.toolCallId,
              toolName: part.toolName,
              arguments: part.arguments,
            };
            toolCalls.push(call);
            content.push({ type: 'tool-call', ...call });
            openText = undefined;
            openReasoning = undefined;
            if (this.listening) this.emit({ type: 'tool-call-end', step, ...call });
            break;
          }
          case 'usage':
            usage = addUsage(usage, part.usage);
            break;
          case 'finish':
            stopReason = part.stopReason;
            break;
        }
      }
    } finally {
      this.inferring = false;
    }
    // Calls that started but never ended (a provider that only streams pieces) are kept as they are.
    for (const [toolCallId, call] of calls) {
      const complete: ToolCall = { toolCallId, toolName: call.toolName, arguments: call.arguments };
      toolCalls.push(complete);
      content.push({ type: 'tool-call', ...complete });
    }
    this.progress.usage = addUsage(this.progress.usage, usage);
    const message: AssistantMessage = {
      id: createId(),
      role: 'assistant',
      content,
      metadata: { runId: this.options.identity.runId, agentId: this.agent.id, step },
    };
    return { message, text, toolCalls, stopReason, usage };
  }

  /** Parses arguments and finds the tool; settles the call with an error result when either fails. */
  private validate(item: PreparedCall): PreparedCall {
    const { call } = item;
    const tool = this.agent.tools.get(call.toolName);
    const frontend = tool
      ? undefined
      : this.options.frontendTools.find((candidate) => candidate.name === call.toolName);
    if (!tool && !frontend) {
      item.result = {
        status: 'error',
        message: `Unknown tool "${call.toolName}". Available tools: ${[...this.agent.tools.keys()].join(', ') || 'none'}.`,
      };
      item.status = 'failed';
      return item;
    }
    const parsed = parseArguments(call.arguments);
    if (!parsed.ok) {
      item.result = {
        status: 'error',
        message: `Invalid arguments for "${call.toolName}": not valid JSON (${parsed.message}).`,
      };
      item.status = 'failed';
      return item;
    }
    if (tool?.inputSchema) {
      const checked = tool.inputSchema.safeParse(parsed.value);
      if (!checked.success) {
        item.result = {
          status: 'error',
          message: `Invalid arguments for "${call.toolName}": ${formatIssues(checked.error)}`,
        };
        item.status = 'failed';
        return item;
      }
      item.input = checked.data;
    } else item.input = parsed.value;
    if (frontend && !item.decision) {
      item.suspend = {
        action: 'frontend-tool',
        message: `Run the client tool "${call.toolName}" and send its result`,
        parameters: (parsed.value ?? null) as never,
        ...(frontend.responseSchema ? { responseSchema: frontend.responseSchema } : {}),
        resumeMode: 'use-decision-as-result',
      };
    }
    return item;
  }

  /** Validates every call and runs the ToolGate hooks (block > suspend > set-result > pass). */
  /** Validates every call (no ToolGate hooks registered). */
  private prepareCalls(response: ModelResponse): PreparedCall[] {
    const prepared: PreparedCall[] = [];
    for (const call of response.toolCalls) {
      this.stepToolsCalled.push(call.toolName);
      prepared.push(this.validate({ call, input: undefined }));
    }
    return prepared;
  }

  private async gate(response: ModelResponse): Promise<PreparedCall[]> {
    const prepared: PreparedCall[] = [];
    const gates = this.agent.plugins.gates;
    for (const call of response.toolCalls) {
      const item = this.validate({ call, input: undefined });
      this.stepToolsCalled.push(call.toolName);
      if (item.result === undefined && item.suspend === undefined && gates.length > 0) {
        const context = {
          ...this.base(response, { ...call, input: item.input }),
          phase: 'ToolGate' as const,
          state: this.state.snapshot(),
        };
        const decisions = await Promise.all(gates.map((entry) => entry.hook(context as never)));
        const decision = strongest(decisions);
        if (decision?.type === 'block') {
          item.result = {
            status: 'error',
            message: `Blocked: ${decision.reason}`,
            metadata: { blocked: true },
          };
          item.status = 'failed';
          (item as PreparedCall & { blocked?: string }).blocked = decision.reason;
        } else if (decision?.type === 'suspend') item.suspend = decision.ticket;
        else if (decision?.type === 'set-result') {
          item.result = decision.result;
          item.status = decision.result.status === 'error' ? 'failed' : 'succeeded';
        }
      }
      prepared.push(item);
    }
    return prepared;
  }

  /** Commits the assistant message and marks the calls about to run as in flight, in one write. */
  private async checkpointBeforeTools(prepared: PreparedCall[]): Promise<void> {
    const now = Date.now();
    const { runId, threadId } = this.options.identity;
    const executions: ToolExecution[] = [];
    for (const item of prepared) {
      if (item.result !== undefined || item.suspend !== undefined) continue;
      executions.push({
        runId,
        toolCallId: item.call.toolCallId,
        threadId,
        toolName: item.call.toolName,
        idempotencyKey: idempotencyKey(runId, item.call.toolCallId),
        status: 'in-flight',
        attempts: 1,
        startedAt: now,
      });
    }
    // Before tools only the call must be durable; the run record rides along once, to create it.
    await this.checkpoint('running', undefined, executions, !this.runWritten);
  }

  private async executeCalls(
    prepared: PreparedCall[],
    response?: ModelResponse,
  ): Promise<{ blocked?: string }> {
    const blockedIndex = prepared.findIndex((item) => (item as { blocked?: string }).blocked !== undefined);
    const blocked = blockedIndex >= 0 ? (prepared[blockedIndex] as { blocked?: string }).blocked : undefined;
    for (let index = blockedIndex + 1; blockedIndex >= 0 && index < prepared.length; index++) {
      const item = prepared[index] as PreparedCall;
      item.result = INTERRUPTED;
      item.status = 'failed';
    }
    let parts: ToolResultPart[];
    if (this.agent.definition.toolExecution?.mode === 'parallel' && prepared.length > 1) {
      const results: Array<ToolResultPart | undefined> = new Array(prepared.length);
      const limit = Math.max(1, this.agent.definition.toolExecution?.concurrency ?? 8);
      let next = 0;
      const worker = async () => {
        while (next < prepared.length) {
          const index = next++;
          results[index] = await this.runCall(prepared[index] as PreparedCall, response);
        }
      };
      await Promise.all(Array.from({ length: Math.min(limit, prepared.length) }, worker));
      parts = results.filter((part): part is ToolResultPart => part !== undefined);
    } else {
      parts = [];
      for (const item of prepared) {
        const part = await this.runCall(item, response);
        if (part) parts.push(part);
      }
    }
    if (parts.length > 0) {
      const message: ToolMessage = {
        id: createId(),
        role: 'tool',
        content: parts,
        metadata: { runId: this.options.identity.runId, step: this.progress.step },
      };
      this.append(message);
    }
    return blocked === undefined ? {} : { blocked };
  }

  /** ToolGate already ran; BeforeToolExecute → execute (through the ledger) → AfterToolExecute. */
  private async runCall(item: PreparedCall, response?: ModelResponse): Promise<ToolResultPart | undefined> {
    const { call } = item;
    const step = this.progress.step;
    const toolCall = { ...call, input: item.input };
    let result = item.result;
    let status: 'succeeded' | 'failed' | 'cancelled' = item.status ?? 'succeeded';
    let fromLedger = false;
    if (result === undefined && item.suspend === undefined) {
      if (this.engine.isActive('BeforeToolExecute'))
        await this.engine.run('BeforeToolExecute', this.base(response, toolCall, undefined, item.decision));
      const outcome = await this.invoke(item, response);
      if (outcome.suspend) item.suspend = outcome.suspend;
      else {
        result = outcome.result;
        fromLedger = outcome.fromLedger;
        status = result?.status === 'error' ? 'failed' : 'succeeded';
      }
    }
    if (item.suspend !== undefined) {
      const ticket = this.createTicket(call, item.suspend);
      this.state.commit([{ key: pendingCallsKey, update: { type: 'suspend', ticket } }]);
      if (this.listening) this.emit({ type: 'tool-call-suspended', ticket });
      return undefined;
    }
    const finalResult = result as ToolResult;
    if (this.engine.isActive('AfterToolExecute')) {
      await this.engine.run('AfterToolExecute', this.base(response, toolCall, finalResult, item.decision));
    }
    this.progress.consecutiveToolErrors =
      finalResult.status === 'error' ? this.progress.consecutiveToolErrors + 1 : 0;
    if (this.listening)
      this.emit({
        type: 'tool-result',
        step,
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        status,
        result: finalResult,
        fromLedger,
      });
    return { type: 'tool-result', toolCallId: call.toolCallId, toolName: call.toolName, result: finalResult };
  }

  private createTicket(call: ToolCall, input: TicketInput): SuspensionTicket {
    return {
      id: createId(),
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      arguments: call.arguments,
      action: input.action ?? 'approve',
      message: input.message,
      ...(input.parameters === undefined ? {} : { parameters: input.parameters }),
      ...(input.responseSchema === undefined ? {} : { responseSchema: toJsonSchema(input.responseSchema) }),
      resumeMode: input.resumeMode ?? 'replay-tool-call',
      runId: this.options.identity.runId,
    };
  }

  private async invoke(
    item: PreparedCall,
    response?: ModelResponse,
  ): Promise<{ result?: ToolResult; suspend?: TicketInput; fromLedger: boolean }> {
    const { call } = item;
    const { identity, persistence, leaseToken } = this.options;
    const tool = this.agent.tools.get(call.toolName);
    if (!tool)
      return { result: { status: 'error', message: `Unknown tool "${call.toolName}".` }, fromLedger: false };
    const key = idempotencyKey(identity.runId, call.toolCallId);
    let rerun = false;
    let attempts = 1;
    if (item.ledgerChecked && persistence.durable) {
      const entry = await persistence.beginTool({
        runId: identity.runId,
        toolCallId: call.toolCallId,
        threadId: identity.threadId,
        toolName: call.toolName,
        idempotencyKey: key,
        ...(leaseToken === undefined ? {} : { leaseToken }),
      });
      if (entry?.status === 'completed' && entry.result) return { result: entry.result, fromLedger: true };
      attempts = entry?.attempts ?? 1;
      rerun = attempts > 1;
    }
    if (this.listening)
      this.emit({
        type: 'tool-execution-start',
        step: this.progress.step,
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        idempotencyKey: key,
        rerun,
      });
    const signal = this.options.signal;
    const context = new ToolCallContext(this, call, identity, this.state, signal, key, rerun, item.decision);
    let result: ToolResult;
    const policy = this.errorPolicy(call.toolName);
    for (let attempt = 0; ; attempt++) {
      try {
        const value = await tool.execute(item.input, context);
        if (ToolOutput.isInstance(value)) {
          if (value.suspend && !item.decision) return { suspend: value.suspend, fromLedger: false };
          await this.engine.apply(value.command, this.base(response));
          result = value.result;
        } else {
          result = { status: 'success', ...(value === undefined ? {} : { data: toJson(value) }) };
        }
        break;
      } catch (error) {
        if (signal.aborted)
          throw new LunationError('cancelled', 'The run was cancelled during a tool call', { cause: error });
        const retryable = LunationError.isInstance(error)
          ? error.isRetryable
          : (error as { retryable?: unknown })?.retryable === true;
        if (policy.policy === 'retry' && retryable && attempt < (policy.maxRetries ?? 2)) {
          await delay((policy.backoffMs ?? 100) * 2 ** attempt, signal);
          continue;
        }
        const message = error instanceof Error ? error.message : String(error);
        result = {
          status: 'error',
          message: `Tool "${call.toolName}" failed: ${message}`,
          ...(LunationError.isInstance(error)
            ? { metadata: { code: error.code, retryable: error.isRetryable } }
            : {}),
          ...(attempt > 0 ? { metadata: { attempts: attempt + 1 } } : {}),
        };
        break;
      }
    }
    if (result.status === 'error' && policy.policy === 'stop')
      this.toolErrorStop = `${call.toolName}: ${result.message ?? 'error'}`;
    if (persistence.durable) {
      this.pendingLedger.push({
        toolCallId: call.toolCallId,
        result,
        execution: {
          runId: identity.runId,
          toolCallId: call.toolCallId,
          threadId: identity.threadId,
          toolName: call.toolName,
          idempotencyKey: key,
          status: 'completed',
          result,
          attempts,
          startedAt: Date.now(),
          completedAt: Date.now(),
        },
      });
      await this.flushLedger(false);
    }
    return { result, fromLedger: false };
  }

  /**
   * Ledger completions are written at once, except the latest one, which rides along with the next checkpoint:
   * a finished side effect is recorded before the next tool starts, in as few writes as possible.
   */
  private async flushLedger(all: boolean): Promise<void> {
    const keep = all ? 0 : 1;
    while (this.pendingLedger.length > keep) {
      const entry = this.pendingLedger.shift();
      if (!entry) break;
      await this.options.persistence.completeTool({
        runId: this.options.identity.runId,
        toolCallId: entry.toolCallId,
        result: entry.result,
        ...(this.options.leaseToken === undefined ? {} : { leaseToken: this.options.leaseToken }),
      });
    }
  }

  /**
   * Calls of the last assistant message left without a result by a cancelled or failed run get one saying so,
   * so that no later run executes them behind the user's back. Suspended calls keep their tickets.
   */
  private answerInterruptedCalls(reason: 'cancelled' | 'error'): void {
    const waiting = new Set(this.openTickets().map((ticket) => ticket.toolCallId));
    const unanswered = unansweredCalls(this.messages).filter((call) => !waiting.has(call.toolCallId));
    if (unanswered.length === 0) return;
    const why =
      reason === 'cancelled'
        ? 'the run was cancelled before this call finished'
        : 'the run failed before this call finished';
    this.append({
      id: createId(),
      role: 'tool',
      content: unanswered.map((call) => ({
        type: 'tool-result' as const,
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        result: cancelledResult(why),
      })),
      metadata: { runId: this.options.identity.runId, step: this.progress.step },
    });
  }

  private errorPolicy(toolName: string): ToolErrorPolicy {
    const definition = this.agent.definition;
    return definition.toolErrorPolicies?.[toolName] ?? definition.toolErrorPolicy ?? { policy: 'continue' };
  }

  /** @internal */
  backgroundFor(toolCallId: string): BackgroundTasks {
    const host = this.options.tasks;
    const record = (task: TaskRecord) => {
      if (!this.state.isRegistered(tasksKey)) this.state.register(tasksKey);
      this.state.commit([{ key: tasksKey, update: task }]);
      return task.id;
    };
    const unavailable = () => {
      throw new LunationError(
        'invalid-argument',
        `Background tasks are not available to tool call ${toolCallId}`,
      );
    };
    return {
      spawn: (name, work) => (host ? record(host.spawn(this.options.identity, name, work)) : unavailable()),
      spawnAgent: (agentId, task) =>
        host ? record(host.spawnAgent(this.options.identity, agentId, task)) : unavailable(),
    };
  }

  private openTickets(): SuspensionTicket[] {
    const pending = this.state.peek(pendingCallsKey);
    const tickets: SuspensionTicket[] = [];
    for (const entry of Object.values(pending)) tickets.push(entry.ticket);
    return tickets;
  }

  private runRecord(status: RunStatus, termination: TerminationReason | undefined): RunRecord {
    const now = Date.now();
    return {
      identity: this.options.identity,
      status,
      ...(termination === undefined ? {} : { termination }),
      steps: this.progress.step,
      usage: this.progress.usage,
      openTickets: this.openTickets(),
      state: this.state.exportScope('run'),
      finalText: this.finalText,
      ...(this.options.registryVersion === undefined
        ? {}
        : { registryVersion: this.options.registryVersion }),
      createdAt: this.createdAt,
      updatedAt: now,
    };
  }

  /** Commits the messages added since the last checkpoint with the run record (and thread state if changed). */
  private async checkpoint(
    status: RunStatus,
    termination: TerminationReason | undefined,
    executions: ToolExecution[] = [],
    withRun = true,
  ): Promise<void> {
    const { persistence, identity, leaseToken } = this.options;
    const newMessages = this.messages.slice(this.committedCount);
    const threadRevision = this.state.threadRevision;
    const threadChanged = threadRevision !== this.lastThreadRevision;
    for (const entry of this.pendingLedger) executions.push(entry.execution);
    this.pendingLedger = [];
    this.committedCount = await persistence.commit({
      threadId: identity.threadId,
      expectedMessageCount: this.committedCount,
      messages: newMessages,
      ...(withRun ? { run: this.runRecord(status, termination) } : {}),
      ...(threadChanged ? { threadState: this.state.exportScope('thread') } : {}),
      ...(executions.length > 0 ? { toolExecutions: executions } : {}),
      ...(leaseToken === undefined ? {} : { leaseToken }),
    });
    this.lastThreadRevision = threadRevision;
    if (withRun) this.runWritten = true;
  }

  private async compactIfNeeded(): Promise<void> {
    const compaction = this.agent.definition.context?.compaction;
    if (!compaction) return;
    const visible = applyCompaction(this.messages);
    if (estimateTokens(visible) <= compaction.thresholdTokens) return;
    const keep = compaction.keepRecentMessages ?? 6;
    let cut = this.messages.length - keep;
    // Never end the summarised range between a tool call and its results.
    while (cut > 0 && this.messages[cut]?.role === 'tool') cut--;
    // Summaries are cumulative: the new one also summarises the previous summary, so it covers 1..cut.
    const fromSeq = 1;
    const previous = applyCompaction(this.messages).find((message) => summaryRange(message) !== undefined);
    if (previous && (summaryRange(previous)?.toSeq ?? 0) >= cut) return;
    if (cut < fromSeq) return;
    const toSummarise = applyCompaction(this.messages.slice(0, cut));
    const request: ModelRequest = {
      messages: [
        ...toSummarise,
        {
          id: createId(),
          role: 'user',
          content: [{ type: 'text', text: compaction.prompt ?? DEFAULT_COMPACTION_PROMPT }],
        },
      ],
      tools: [],
    };
    let summary = '';
    for await (const part of this.agent.model.stream(request, { signal: this.options.signal })) {
      if (part.type === 'text-delta') summary += part.delta;
      else if (part.type === 'usage') this.progress.usage = addUsage(this.progress.usage, part.usage);
    }
    this.append({
      id: createId(),
      role: 'system',
      content: [{ type: 'text', text: `<conversation-summary>\n${summary}\n</conversation-summary>` }],
      metadata: {
        compaction: { fromSeq, toSeq: cut },
        runId: this.options.identity.runId,
        visibility: 'internal',
      },
    });
  }

  private async finish(termination: TerminationReason): Promise<RunResult> {
    const status = statusForTermination(termination);
    if (termination.type === 'cancelled' || termination.type === 'error')
      this.answerInterruptedCalls(termination.type);
    try {
      if (termination.type !== 'cancelled' || !this.options.signal.aborted) {
        if (this.engine.isActive('RunEnd')) await this.engine.run('RunEnd', this.base());
      }
    } catch (error) {
      if (this.listening) this.emit({ type: 'error', error: toErrorInfo(error) });
    }
    this.state.commit([{ key: runProgressKey, update: { ...this.progress } }]);
    try {
      await this.flushLedger(false);
      await this.checkpoint(status, termination);
    } catch (error) {
      if (this.listening) this.emit({ type: 'error', error: toErrorInfo(error) });
      if (termination.type !== 'error') termination = { type: 'error', error: toErrorInfo(error) };
    }
    if (this.progress.step > 0) this.emitStepEnd();
    const openTickets = this.openTickets();
    if (this.listening)
      this.emit({
        type: 'run-end',
        status,
        termination,
        finalText: this.finalText,
        steps: this.progress.step,
        usage: this.progress.usage,
        openTickets,
        timestamp: Date.now(),
      });
    return {
      identity: this.options.identity,
      status,
      termination,
      finalText: this.finalText,
      steps: this.progress.step,
      usage: this.progress.usage,
      openTickets,
      messages: this.runMessages,
    };
  }
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new LunationError('cancelled', 'The run was cancelled during a tool retry'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The context of one tool execution. */
class ToolCallContext implements ToolContext {
  readonly toolCallId: string;
  readonly toolName: string;
  private backgroundTasks: BackgroundTasks | undefined;
  private snapshot: StateSnapshot | undefined;

  constructor(
    private readonly loop: AgentLoop,
    call: ToolCall,
    readonly identity: RunIdentity,
    private readonly store: StateStore,
    readonly signal: AbortSignal,
    readonly idempotencyKey: string,
    readonly rerun: boolean,
    readonly decision: ResumeDecision | undefined,
  ) {
    this.toolCallId = call.toolCallId;
    this.toolName = call.toolName;
  }

  /** The state as the call started (taken when first read). */
  get state(): StateSnapshot {
    if (!this.snapshot) this.snapshot = this.store.snapshot();
    return this.snapshot;
  }

  get background(): BackgroundTasks {
    if (!this.backgroundTasks) this.backgroundTasks = this.loop.backgroundFor(this.toolCallId);
    return this.backgroundTasks;
  }

  reportProgress(progress: JsonValue): void {
    this.loop.emit({ type: 'tool-progress', toolCallId: this.toolCallId, toolName: this.toolName, progress });
  }

  suspend(ticket: TicketInput): ToolOutput {
    return new ToolOutput({ status: 'pending' }, undefined, ticket);
  }

  output(result: ToolResult, command?: Command): ToolOutput {
    return new ToolOutput(result, command);
  }
}

/** Stable per tool call, across re-runs after a crash. */
export function idempotencyKey(runId: string, toolCallId: string): string {
  return `${runId}:${toolCallId}`;
}

function cancelledResult(why: string): ToolResult {
  return { status: 'error', message: `Cancelled: ${why}.`, metadata: { cancelled: true } };
}

function strongest(
  decisions: ReadonlyArray<ToolGateDecision | undefined | void>,
): ToolGateDecision | undefined {
  let best: ToolGateDecision | undefined;
  const rank = { block: 3, suspend: 2, 'set-result': 1 } as const;
  for (const decision of decisions) {
    if (decision && (!best || rank[decision.type] > rank[best.type])) best = decision;
  }
  return best;
}

function contextMessage(key: string, role: 'system' | 'user', text: string): Message {
  return {
    id: `context:${key}`,
    role,
    content: [{ type: 'text', text }],
    metadata: { visibility: 'internal' },
  };
}

function abortReason(signal: AbortSignal): string | undefined {
  const reason = signal.reason;
  if (reason === undefined) return undefined;
  if (typeof reason === 'string') return reason;
  if (reason instanceof Error) return reason.message;
  return undefined;
}

function toJson(value: unknown): ToolResult['data'] {
  if (isPlainJson(value, 0)) return value as ToolResult['data'];
  return JSON.parse(JSON.stringify(value)) as ToolResult['data'];
}

/** True for JSON values made of plain objects, arrays and finite primitives (kept as they are, not copied). */
function isPlainJson(value: unknown, depth: number): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || depth > 32) return false;
  if (Array.isArray(value)) {
    for (const item of value) if (!isPlainJson(item, depth + 1)) return false;
    return true;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined || !isPlainJson(item, depth + 1)) return false;
  }
  return true;
}

/** Tool calls of the last assistant message that no later tool message answers. */
export function unansweredCalls(messages: readonly Message[]): ToolCall[] {
  let index = messages.length - 1;
  const answered = new Set<string>();
  while (index >= 0 && messages[index]?.role === 'tool') {
    for (const part of (messages[index] as ToolMessage).content) answered.add(part.toolCallId);
    index--;
  }
  const last = messages[index];
  if (last?.role !== 'assistant') return [];
  const calls: ToolCall[] = [];
  for (const part of last.content as ContentPart[]) {
    if (part.type === 'tool-call' && !answered.has(part.toolCallId)) {
      calls.push({ toolCallId: part.toolCallId, toolName: part.toolName, arguments: part.arguments });
    }
  }
  return calls;
}
