import type { EventSink, Instrumentation, LunationStore, ModelProvider } from '@lunation/contract';
import type { AgentDefinition } from './agent.js';
import { AgentRuntime, type AgentRuntimeOptions } from './agent-runtime.js';
import type { Plugin } from './plugin.js';
import type { AnyTool } from './tool.js';

/** What {@link AgentRuntimeBuilder.options} sets: leases, retention, snapshots, and the clock and ids. */
export type RuntimeSettings = Pick<
  AgentRuntimeOptions,
  'leaseTtlMs' | 'owner' | 'emitStateSnapshots' | 'retention' | 'clock' | 'ids'
>;

/** Composes models, agents, shared tools and plugins, a store and sinks into an AgentRuntime. */
export class AgentRuntimeBuilder {
  private readonly models: Record<string, ModelProvider> = {};
  private readonly agents: AgentDefinition[] = [];
  private readonly tools: AnyTool[] = [];
  private readonly plugins: Plugin<unknown>[] = [];
  private readonly globalPlugins: Array<{ plugin: Plugin<unknown>; config?: unknown }> = [];
  private readonly sinks: EventSink[] = [];
  private storeInstance: LunationStore | undefined;
  private instrumentationInstance: Instrumentation | undefined;
  private settings: RuntimeSettings = {};

  /** Registers a model under an id agents refer to. */
  model(id: string, provider: ModelProvider): this {
    this.models[id] = provider;
    return this;
  }

  /** Adds an agent. */
  agent(definition: AgentDefinition): this {
    this.agents.push(definition);
    return this;
  }

  /** A shared tool agents may name by id. */
  tool(tool: AnyTool): this {
    this.tools.push(tool);
    return this;
  }

  /** A shared plugin agents may name by id; with `{ global: true }` every agent gets it. */
  plugin<Config>(plugin: Plugin<Config>, options?: { global?: boolean; config?: Config }): this {
    if (options?.global)
      this.globalPlugins.push({ plugin: plugin as Plugin<unknown>, config: options.config });
    else this.plugins.push(plugin as Plugin<unknown>);
    return this;
  }

  /** A durable store; without one threads live in this process only. */
  store(store: LunationStore): this {
    this.storeInstance = store;
    return this;
  }

  /** Adds a sink that gets every event of every run. */
  sink(sink: EventSink): this {
    this.sinks.push(sink);
    return this;
  }

  /** Observability (e.g. `@lunation/otel`'s tracing); see {@link AgentRuntimeOptions.instrumentation}. */
  instrumentation(instrumentation: Instrumentation): this {
    this.instrumentationInstance = instrumentation;
    return this;
  }

  /** Lease settings, retention, state snapshots, the clock and the id source; see {@link AgentRuntimeOptions}. */
  options(settings: RuntimeSettings): this {
    this.settings = { ...this.settings, ...settings };
    return this;
  }

  /** Validates everything and reports every problem at once (`build-invalid`). */
  build(): AgentRuntime {
    return new AgentRuntime({
      models: this.models,
      agents: this.agents,
      tools: this.tools,
      plugins: this.plugins,
      globalPlugins: this.globalPlugins,
      sinks: this.sinks,
      ...(this.storeInstance ? { store: this.storeInstance } : {}),
      ...(this.instrumentationInstance ? { instrumentation: this.instrumentationInstance } : {}),
      ...this.settings,
    });
  }
}

/** Starts a runtime builder. */
export function createRuntime(): AgentRuntimeBuilder {
  return new AgentRuntimeBuilder();
}
