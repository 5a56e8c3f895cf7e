import {
  assertSpecificationVersion,
  LunationError,
  type ModelProvider,
  type ToolDescriptor,
} from '@lunation/contract';
import type { AgentDefinition, PluginReference, ResolvedAgent } from './agent.js';
import { loopStatePlugin } from './loop/loop-state-plugin.js';
import { type Plugin, PluginSet } from './plugin.js';
import { corePlugin } from './runtime-keys.js';
import type { AnyTool } from './tool.js';

/** The set of agents, models, tools and plugins a runtime runs with. */
export interface RegistrySet {
  models: Record<string, ModelProvider>;
  agents: AgentDefinition[];
  /** Tools agents may name by id. */
  tools?: AnyTool[];
  /** Plugins agents may name by id. */
  plugins?: Plugin<unknown>[];
  /** Plugins added to every agent (with their config). */
  globalPlugins?: Array<{ plugin: Plugin<unknown>; config?: unknown }>;
}

/** Builds the tool that delegates to another agent (supplied by AgentRuntime). */
export type DelegateToolFactory = (delegate: AgentDefinition, parent: AgentDefinition) => AnyTool;

/** One validated version of the registry. */
export class RegistrySnapshot {
  private resolved = new Map<string, ResolvedAgent>();

  /** @internal */
  constructor(
    readonly version: number,
    readonly set: RegistrySet,
    agents: Map<string, ResolvedAgent>,
  ) {
    this.resolved = agents;
  }

  /** The agents' ids, in registration order. */
  get agentIds(): string[] {
    return [...this.resolved.keys()];
  }

  /** The first agent's id (the default of a run that names none), without listing them all. */
  get firstAgentId(): string | undefined {
    for (const agentId of this.resolved.keys()) return agentId;
    return undefined;
  }

  /** True when the agent exists in this version. */
  hasAgent(agentId: string): boolean {
    return this.resolved.has(agentId);
  }

  /** The resolved agent; `not-found` for an unknown id. */
  agent(agentId: string): ResolvedAgent {
    const agent = this.resolved.get(agentId);
    if (!agent) {
      throw new LunationError(
        'not-found',
        `Unknown agent "${agentId}"; known agents: ${this.agentIds.join(', ') || 'none'}`,
      );
    }
    return agent;
  }
}

/**
 * Resolves every agent of a set, collecting every problem; throws `build-invalid` listing them all, or first
 * `specification-mismatch` for a model declaring another specification version than the contract's.
 */
export function resolveRegistry(
  set: RegistrySet,
  version: number,
  delegateTool: DelegateToolFactory,
): RegistrySnapshot {
  for (const [id, model] of Object.entries(set.models)) {
    assertSpecificationVersion('model', model, `model "${id}"`);
  }
  const problems: string[] = [];
  const sharedTools = new Map<string, AnyTool>();
  for (const tool of set.tools ?? []) {
    if (sharedTools.has(tool.descriptor.name))
      problems.push(`Tool "${tool.descriptor.name}" is registered twice`);
    sharedTools.set(tool.descriptor.name, tool);
  }
  const sharedPlugins = new Map<string, Plugin<unknown>>();
  for (const plugin of set.plugins ?? []) {
    if (sharedPlugins.has(plugin.name)) problems.push(`Plugin "${plugin.name}" is registered twice`);
    sharedPlugins.set(plugin.name, plugin);
  }
  const definitions = new Map<string, AgentDefinition>();
  for (const agent of set.agents) {
    if (definitions.has(agent.id)) problems.push(`Agent "${agent.id}" is defined twice`);
    definitions.set(agent.id, agent);
  }
  const resolved = new Map<string, ResolvedAgent>();
  for (const definition of definitions.values()) {
    const where = `Agent "${definition.id}"`;
    const agentProblems: string[] = [];
    const model = set.models[definition.model];
    if (!model) {
      agentProblems.push(
        `${where}: unknown model "${definition.model}"; known models: ${Object.keys(set.models).join(', ') || 'none'}`,
      );
    }
    const plugins = new PluginSet();
    const addPlugin = (plugin: Plugin<unknown>, rawConfig: unknown) => {
      let config = rawConfig;
      if (plugin.configSchema) {
        const parsed = plugin.configSchema.safeParse(rawConfig);
        if (!parsed.success) {
          for (const issue of parsed.error.issues) {
            const field = issue.path.length > 0 ? issue.path.join('.') : '(config)';
            agentProblems.push(
              `${where}: plugin "${plugin.name}" has an invalid config at "${field}": ${issue.message}`,
            );
          }
          return;
        }
        config = parsed.data;
      }
      try {
        plugins.add(plugin, config);
      } catch (error) {
        agentProblems.push(`${where}: ${(error as Error).message}`);
      }
    };
    addPlugin(corePlugin as Plugin<unknown>, undefined);
    addPlugin(loopStatePlugin as Plugin<unknown>, undefined);
    for (const global of set.globalPlugins ?? []) addPlugin(global.plugin, global.config);
    for (const reference of definition.plugins ?? []) {
      const { plugin, config } = normalisePlugin(reference);
      const found = typeof plugin === 'string' ? sharedPlugins.get(plugin) : plugin;
      if (!found) {
        agentProblems.push(`${where}: unknown plugin "${String(plugin)}"`);
        continue;
      }
      addPlugin(found, config);
    }
    const tools = new Map<string, AnyTool>();
    const addTool = (tool: AnyTool) => {
      if (tools.has(tool.descriptor.name))
        agentProblems.push(`${where}: tool "${tool.descriptor.name}" is given twice`);
      tools.set(tool.descriptor.name, tool);
    };
    for (const reference of definition.tools ?? []) {
      if (typeof reference === 'string') {
        const tool = sharedTools.get(reference);
        if (tool) addTool(tool);
        else agentProblems.push(`${where}: unknown tool "${reference}"`);
      } else addTool(reference);
    }
    for (const { tool } of plugins.tools.values()) addTool(tool);
    for (const delegateId of definition.delegates ?? []) {
      const delegate = definitions.get(delegateId);
      if (!delegate) agentProblems.push(`${where}: unknown delegate agent "${delegateId}"`);
      else if (delegateId === definition.id) agentProblems.push(`${where}: cannot delegate to itself`);
      else addTool(delegateTool(delegate, definition));
    }
    if (
      definition.maxRounds !== undefined &&
      (!Number.isInteger(definition.maxRounds) || definition.maxRounds < 0)
    ) {
      agentProblems.push(`${where}: maxRounds must be a non-negative integer (0 disables it)`);
    }
    problems.push(...agentProblems);
    if (agentProblems.length > 0 || !model) continue;
    const descriptors: ToolDescriptor[] = [...tools.values()].map((tool) => tool.descriptor);
    resolved.set(definition.id, {
      definition,
      id: definition.id,
      model,
      plugins,
      tools,
      descriptors,
      maxRounds: definition.maxRounds ?? 50,
    });
  }
  if (problems.length > 0) {
    throw new LunationError(
      'build-invalid',
      `The runtime definition has ${problems.length} problem${problems.length === 1 ? '' : 's'}:\n- ${problems.join('\n- ')}`,
      { details: { problems } },
    );
  }
  return new RegistrySnapshot(version, set, resolved);
}

function normalisePlugin(reference: PluginReference): { plugin: Plugin<unknown> | string; config: unknown } {
  if (typeof reference === 'string') return { plugin: reference, config: undefined };
  if ('register' in reference) return { plugin: reference, config: undefined };
  return { plugin: reference.plugin, config: reference.config };
}

/** The runtime's versioned registry: replace it whole or update it; a bad set is rejected and the old one stays. */
export class AgentRegistry {
  private snapshot: RegistrySnapshot;

  /** @internal */
  constructor(
    set: RegistrySet,
    private readonly delegateTool: DelegateToolFactory,
  ) {
    this.snapshot = resolveRegistry(set, 1, delegateTool);
  }

  /** The newest version. */
  get current(): RegistrySnapshot {
    return this.snapshot;
  }

  get version(): number {
    return this.snapshot.version;
  }

  /** Validates `set` and makes it the newest version. Running runs keep the version they started with. */
  replace(set: RegistrySet): RegistrySnapshot {
    this.snapshot = resolveRegistry(set, this.snapshot.version + 1, this.delegateTool);
    return this.snapshot;
  }

  /** Replaces the set with `change(current set)`. */
  update(change: (set: RegistrySet) => RegistrySet): RegistrySnapshot {
    return this.replace(change(this.snapshot.set));
  }
}
