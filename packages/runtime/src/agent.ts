import type {
  InterruptPolicy,
  ModelOverrides,
  ModelProvider,
  ToolDescriptor,
  Usage,
} from '@lunation/contract';
import type { z } from 'zod';
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

/** How long a tool call may run before it times out, unless the tool or the agent says otherwise. */
export const DEFAULT_TOOL_TIMEOUT_MS = 300_000;
/** How long a timed-out or cancelled tool call may take to stop before it is abandoned. */
export const DEFAULT_TOOL_CANCEL_GRACE_MS = 1_000;

/** Whether an agent runs a step's tool calls one after another or overlapping. */
export interface ToolExecutionOptions {
  /** @default 'sequential' */
  mode?: 'sequential' | 'parallel';
  /** Parallel mode: most calls running at once. @default 8 */
  concurrency?: number;
  /**
   * Milliseconds a tool call may run; a tool's own `timeoutMs` wins. Past it the call's signal aborts and the
   * model gets an error result; the run goes on. 0 disables. @default DEFAULT_TOOL_TIMEOUT_MS (5 minutes)
   */
  timeoutMs?: number;
  /**
   * Milliseconds a timed-out or cancelled call may take to settle after its signal aborted. A call still
   * running then is abandoned: its result says so, the ledger records it (it never re-runs), and a cancelled
   * run ends without waiting for it. @default DEFAULT_TOOL_CANCEL_GRACE_MS (1 second)
   */
  cancelGraceMs?: number;
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
  /**
   * What recovery does with a call of this agent's tools found started but not finished after a crash, unless
   * a plugin (the permission plugin's rules) or the tool itself says otherwise: `rerun`, `fail` or `ask`.
   * @default 'rerun'
   */
  interruptPolicy?: InterruptPolicy;
  /** Default model settings for this agent. */
  overrides?: ModelOverrides;
  /**
   * The run must end with a JSON value matching this schema: it is asked for in the provider's native
   * structured-output mode where there is one, then validated; the run's result carries it as `output`.
   */
  output?: z.ZodType;
  /** Repair rounds after an answer that does not match `output` (then `output-invalid`). @default 1 */
  outputRepairs?: number;
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
