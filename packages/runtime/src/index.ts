export {
  type AgentDefinition,
  DEFAULT_TOOL_CANCEL_GRACE_MS,
  DEFAULT_TOOL_TIMEOUT_MS,
  type PluginReference,
  type ResolvedAgent,
  type StepStats,
  type StopCondition,
  type ToolErrorPolicy,
  type ToolExecutionOptions,
} from './agent.js';
export {
  AgentRuntime,
  type DecisionOutcome,
  type DecisionTarget,
  type ForkOptions,
  type ForkOutcome,
  type ResumeCutOffRunsOptions,
  type ResumedCutOffRuns,
  type RunHandle,
  type RunInput,
  type RunOptions,
  type SendDecisionsOptions,
  type Session,
} from './agent-runtime.js';
export {
  type BackgroundTasks,
  type TaskHost,
  type TaskRecord,
  type TaskStatus,
  tasksKey,
} from './background-tasks.js';
export { AgentRuntimeBuilder, createRuntime, type RuntimeSettings } from './builder.js';
export {
  type ActionType,
  type Command,
  defineAction,
  defineEffect,
  type EffectType,
  type EmittedEffect,
  emitEffect,
  type ScheduledAction,
  scheduleAction,
} from './command.js';
export type { CompactionPolicy, ContextPolicy } from './context-policy.js';
export type { ThreadCaller } from './decision-admission.js';
export { EventStream } from './event-stream.js';
export { type ToolCallRecord, toolCallsKey, unansweredCalls } from './loop/call-records.js';
export { idempotencyKey } from './loop/checkpointer.js';
export type { DeliveryMode } from './loop/inbox.js';
export type { FrontendTool, RunResult } from './loop/run-scope.js';
export { MAX_JSON_DEPTH } from './loop/storable.js';
export type { InProcessRetention } from './persistence.js';
export type { Phase } from './phase.js';
export {
  type ActionHandler,
  type AgentView,
  definePlugin,
  type EffectContext,
  type EffectHandler,
  type InterruptPolicyResolver,
  type ModelResponse,
  type PhaseContext,
  type PhaseHook,
  type Plugin,
  type PluginRegistrar,
  type RequestDraft,
  type RequestTransform,
  type ToolGateDecision,
  type ToolGateHook,
} from './plugin.js';
export { backgroundTasksPlugin } from './plugins/background-tasks-plugin.js';
export { type PermissionRule, permissionPlugin } from './plugins/permission-plugin.js';
export { AgentRegistry, type RegistrySet, RegistrySnapshot } from './registry.js';
export {
  activeAgentKey,
  addContextMessage,
  allowedToolsKey,
  type ContextMessage,
  excludeTools,
  handoffTo,
  includeOnlyTools,
  setInferenceOverrides,
} from './runtime-keys.js';
export {
  type AnyStateKey,
  defineStateKey,
  type MergeMode,
  type StateKey,
  type StateKeyOptions,
  type StateScope,
  StateSnapshot,
  type StateUpdate,
  updateState,
} from './state.js';
export type {
  CheckpointCall,
  ForkOrigin,
  ForkResult,
  ForkThreadOptions,
  SettledCall,
  ThreadStepCheckpoint,
} from './time-travel.js';
export {
  type AnyTool,
  defineTool,
  type TicketInput,
  type Tool,
  type ToolContext,
  type ToolDefinition,
  ToolOutput,
} from './tool.js';
