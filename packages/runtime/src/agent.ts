import type { ModelOverrides, ModelProvider, ToolDescriptor, Usage } from '@lunation/contract';
import type { ContextPolicy } from './context-policy.js';
import type { Plugin, PluginSet } from './plugin.js';
import type { AnyTool } from './tool.js';

/** Statistics a stop condition sees at the end of each step. */
export interface StepStats {
  readonly step: number;
  readonly usage: Usage;
  readonly elapsedMs: number;
  readonly consecutiveToolErrors: number;
  /** Names of the tools called in this step. */
  readonly toolsCalled: readonly string[];
}

/** Ends a run `stopped` with `code` when it fires. Evaluated at StepEnd, after the step's messages are kept. */
export type StopCondition =
  | { type: 'token-budget'; maxTokens: number }
  | { type: 'timeout'; ms: number }
  | { type: 'consecutive-tool-errors'; max: number }
  | { type: 'tool-called'; toolName: string }
  | {
      type: 'custom';
      code: string;
      /** True when the run should stop. */
      check: (stats: StepStats) => boolean;
    };

/** Whether an agent runs a step's tool calls one after another or overlapping. */
export interface ToolExecutionOptions {
  /** @default 'sequential' */
  mode: 'sequential' | 'parallel';
  /** Parallel mode: most calls running at once. @default 8 */
  concurrency?: number;
}

/**
 * What happens when a tool call fails: `continue` (the model sees the error result), `retry` (errors marked
 * retryable are retried up to `maxRetries` times with exponential backoff from `backoffMs`), or `stop` (the
 * run ends `stopped` with code `tool-error`, after the step's results are kept).
 */
export type ToolErrorPolicy =
  | { policy: 'continue' }
  | { policy: 'retry'; maxRetries?: number; backoffMs?: number }
  | { policy: 'stop' };

/** A plugin reference in an agent: the plugin (or its id in the builder) and its config. */
export type PluginReference =
  | Plugin<unknown>
  | string
  | { plugin: Plugin<unknown> | string; config?: unknown };

/** What an agent is. */
export interface AgentDefinition {
  id: string;
  /** Id of a model registered in the builder. */
  model: string;
  systemPrompt?: string;
  description?: string;
  /** Tools, or ids of shared tools registered in the builder. */
  tools?: Array<AnyTool | string>;
  plugins?: PluginReference[];
  /** Steps before the run ends `stopped` (`max-rounds`); 0 disables. @default 50 */
  maxRounds?: number;
  stopConditions?: StopCondition[];
  context?: ContextPolicy;
  /** Ids of agents this one may delegate to; each becomes a tool `agent_<id>`. */
  delegates?: string[];
  toolExecution?: ToolExecutionOptions;
  /** @default { policy: 'continue' } */
  toolErrorPolicy?: ToolErrorPolicy;
  /** Per-tool overrides of `toolErrorPolicy`, by tool name. */
  toolErrorPolicies?: Record<string, ToolErrorPolicy>;
  /** Default model settings for this agent. */
  overrides?: ModelOverrides;
}

/** An agent ready to run: model, tools and plugins looked up and validated. */
export interface ResolvedAgent {
  readonly definition: AgentDefinition;
  readonly id: string;
  readonly model: ModelProvider;
  readonly plugins: PluginSet;
  readonly tools: ReadonlyMap<string, AnyTool>;
  readonly descriptors: readonly ToolDescriptor[];
  readonly maxRounds: number;
}
