import {
  type AssistantMessage,
  type InterruptPolicy,
  LunationError,
  type Message,
  type ModelOverrides,
  type ResumeDecision,
  type RunIdentity,
  type StopReason,
  type ToolAnnotations,
  type ToolCall,
  type ToolDescriptor,
  type ToolResult,
  type Usage,
} from '@lunation/contract';
import type { z } from 'zod';
import type { ActionType, Command, EffectType } from './command.js';
import type { Phase } from './phase.js';
import type { AnyStateKey, StateSnapshot } from './state.js';
import type { AnyTool, TicketInput } from './tool.js';

/** The model's answer in one step. */
export interface ModelResponse {
  readonly message: AssistantMessage;
  readonly text: string;
  readonly toolCalls: readonly ToolCall[];
  readonly stopReason: StopReason | undefined;
  /** The call's token usage, as far as the provider told it (zeros when it could not: see `usageUnknown`). */
  readonly usage: Usage;
  /** True when the provider reported no usage for the call (`unknown` usage part): `usage` does not count it. */
  readonly usageUnknown?: boolean;
}

/** The agent as hooks see it. */
export interface AgentView {
  readonly id: string;
  readonly systemPrompt: string | undefined;
  /** Validated config of a plugin of this agent (undefined when the plugin takes none). */
  config<Config>(plugin: Plugin<Config> | string): Config;
}

/** The read-only context of a hook. */
export interface PhaseContext {
  readonly phase: Phase;
  readonly state: StateSnapshot;
  readonly identity: RunIdentity;
  /** The thread's history plus this run's messages so far. */
  readonly messages: readonly Message[];
  readonly agent: AgentView;
  readonly step: number;
  readonly signal: AbortSignal;
  /** From AfterInference on. */
  readonly response: ModelResponse | undefined;
  /** In the tool phases. `input` is the parsed arguments, or undefined when they were invalid. */
  readonly toolCall: (ToolCall & { readonly input: unknown }) | undefined;
  /** In AfterToolExecute. */
  readonly toolResult: ToolResult | undefined;
  /** In the tool phases of a call resumed by a decision. */
  readonly decision: ResumeDecision | undefined;
}

/** A hook of one phase: reads the context, returns a command (or nothing). */
export type PhaseHook = (
  context: PhaseContext,
) => Command | undefined | void | Promise<Command | undefined | void>;

/** What a ToolGate hook decides. Precedence: block > suspend > set-result > pass (undefined). */
export type ToolGateDecision =
  | { type: 'block'; reason: string }
  | { type: 'suspend'; ticket: TicketInput }
  | { type: 'set-result'; result: ToolResult };

/** A ToolGate hook: decides whether a tool call runs, waits, gets a result or blocks the run. */
export type ToolGateHook = (
  context: PhaseContext & {
    readonly toolCall: ToolCall & { readonly input: unknown };
    /** The agent's tool the call names (undefined for a frontend tool): its annotations, timeout, ... */
    readonly tool?: AnyTool | undefined;
  },
) => ToolGateDecision | undefined | void | Promise<ToolGateDecision | undefined | void>;

/**
 * Says what recovery does with a call found started but not finished (see `InterruptPolicy`); undefined
 * leaves it to the tool and the agent. `input` is the call's arguments parsed from JSON (undefined when they
 * do not parse).
 */
export type InterruptPolicyResolver = (call: {
  readonly toolName: string;
  readonly input: unknown;
  /** The called tool's annotations, when it has any. */
  readonly annotations?: ToolAnnotations;
}) => InterruptPolicy | undefined;

/** Handles an action in its phase; may return further commands. */
export type ActionHandler<Payload> = (
  payload: Payload,
  context: PhaseContext,
) => Command | undefined | void | Promise<Command | undefined | void>;

/** What an effect handler sees: the run and the committed state. */
export interface EffectContext {
  readonly identity: RunIdentity;
  readonly state: StateSnapshot;
}

/** Handles an effect after its phase committed; cannot change state. */
export type EffectHandler<Payload> = (payload: Payload, context: EffectContext) => void | Promise<void>;

/** The model request as request transforms see it. */
export interface RequestDraft {
  messages: Message[];
  tools: ToolDescriptor[];
  overrides: ModelOverrides;
}

/** A pure function reshaping messages and tools just before a model call. */
export type RequestTransform = (
  request: RequestDraft,
  context: { identity: RunIdentity; step: number },
) => RequestDraft;

/** Registers a plugin's parts. Every name may be registered once. */
export interface PluginRegistrar<Config = unknown> {
  /** The plugin's validated config for this agent. */
  readonly config: Config;
  /** Registers a state key. */
  stateKey(key: AnyStateKey): void;
  /** Registers a hook of a phase. */
  hook(phase: Exclude<Phase, 'ToolGate'>, hook: PhaseHook): void;
  /** Registers a ToolGate hook. */
  toolGate(hook: ToolGateHook): void;
  /** Adds a tool to every agent with this plugin. */
  tool(tool: AnyTool): void;
  /** Handles an action. */
  onAction<Payload>(action: ActionType<Payload>, handler: ActionHandler<Payload>): void;
  /** Handles an effect. */
  onEffect<Payload>(effect: EffectType<Payload>, handler: EffectHandler<Payload>): void;
  /** Registers a request transform. */
  requestTransform(transform: RequestTransform): void;
  /** Registers who decides the interrupt policy of calls (the most careful answer of all plugins wins). */
  interruptPolicy(resolver: InterruptPolicyResolver): void;
}

/** A plugin: a name, an optional config schema, and `register`. */
export interface Plugin<Config = unknown> {
  readonly name: string;
  readonly configSchema?: z.ZodType<Config>;
  /** Registers the plugin's parts; called once per agent when the runtime is built. */
  register(registrar: PluginRegistrar<Config>): void;
}

/** Identity helper that infers a plugin's config type. */
export function definePlugin<Config = undefined>(plugin: Plugin<Config>): Plugin<Config> {
  return plugin;
}

export interface HookEntry {
  readonly owner: string;
  readonly hook: PhaseHook;
}

export interface GateEntry {
  readonly owner: string;
  readonly hook: ToolGateHook;
}

// biome-ignore lint/suspicious/noExplicitAny: a handler of any payload
type ActionEntry = { owner: string; action: ActionType<any>; handler: ActionHandler<any> };
// biome-ignore lint/suspicious/noExplicitAny: a handler of any payload
type EffectEntry = { owner: string; handler: EffectHandler<any> };

/** Everything the plugins of one agent registered, ready for the engine. */
export class PluginSet {
  readonly keys = new Map<string, AnyStateKey>();
  readonly hooks = new Map<Phase, HookEntry[]>();
  readonly gates: GateEntry[] = [];
  readonly tools = new Map<string, { owner: string; tool: AnyTool }>();
  readonly actions = new Map<string, ActionEntry>();
  readonly effects = new Map<string, EffectEntry[]>();
  readonly transforms: RequestTransform[] = [];
  readonly interruptPolicies: InterruptPolicyResolver[] = [];
  readonly configs = new Map<string, unknown>();

  /** Registers one plugin with its (already validated) config. */
  add(plugin: Plugin<unknown>, config: unknown): void {
    if (this.configs.has(plugin.name)) {
      throw new LunationError('duplicate-registration', `Plugin "${plugin.name}" is registered twice`);
    }
    this.configs.set(plugin.name, config);
    const owner = plugin.name;
    const duplicate = (what: string, name: string) =>
      new LunationError(
        'duplicate-registration',
        `${what} "${name}" is registered twice (second time by plugin "${owner}")`,
      );
    plugin.register({
      config,
      stateKey: (key) => {
        const existing = this.keys.get(key.name);
        if (existing) {
          if (existing === key) return;
          throw duplicate('State key', key.name);
        }
        this.keys.set(key.name, key);
      },
      hook: (phase, hook) => {
        let list = this.hooks.get(phase);
        if (!list) {
          list = [];
          this.hooks.set(phase, list);
        }
        if (list.some((entry) => entry.hook === hook)) throw duplicate(`${phase} hook of`, owner);
        list.push({ owner, hook });
      },
      toolGate: (hook) => {
        if (this.gates.some((entry) => entry.hook === hook)) throw duplicate('ToolGate hook of', owner);
        this.gates.push({ owner, hook });
      },
      tool: (tool) => {
        if (this.tools.has(tool.descriptor.name)) throw duplicate('Tool', tool.descriptor.name);
        this.tools.set(tool.descriptor.name, { owner, tool });
      },
      onAction: (action, handler) => {
        if (this.actions.has(action.name)) throw duplicate('Action handler for', action.name);
        this.actions.set(action.name, { owner, action, handler });
      },
      onEffect: (effect, handler) => {
        let list = this.effects.get(effect.name);
        if (!list) {
          list = [];
          this.effects.set(effect.name, list);
        }
        list.push({ owner, handler });
      },
      requestTransform: (transform) => {
        if (this.transforms.includes(transform)) throw duplicate('Request transform of', owner);
        this.transforms.push(transform);
      },
      interruptPolicy: (resolver) => {
        if (this.interruptPolicies.includes(resolver)) throw duplicate('Interrupt policy resolver of', owner);
        this.interruptPolicies.push(resolver);
      },
    });
  }
}
