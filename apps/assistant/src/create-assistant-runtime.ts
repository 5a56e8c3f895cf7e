import type { Instrumentation, LunationStore, ModelProvider } from '@lunation/contract';
import { type AgentRuntime, type AnyTool, createRuntime, permissionPlugin } from '@lunation/runtime';
import { askUserTool } from './tools/ask-user-tool.js';
import { calculatorTool } from './tools/calculator-tool.js';
import { currentTimeTool } from './tools/current-time-tool.js';
import { createReadFileTool } from './tools/read-file-tool.js';
import { createSlowTaskTool, type SlowTaskToolOptions } from './tools/slow-task-tool.js';

export interface AssistantRuntimeOptions {
  model: ModelProvider;
  store: LunationStore;
  /** The folder `read_file` may read. */
  sandbox: string;
  slowTask?: SlowTaskToolOptions;
  /**
   * The runtime's lease owner. Stable across restarts (one per data folder and command), so a restarted server
   * takes over the threads whose runs died with it once their leases go three quarters of `leaseTtlMs` unrenewed, instead of
   * waiting for them to expire. Each live process still holds leases under an incarnation of its own, so two
   * servers started with one owner never run one thread at once.
   */
  owner?: string;
  /** Tools of MCP servers (`McpToolset.tools()`); one that is not read-only needs the user's approval. */
  mcpTools?: readonly AnyTool[];
  /** Thread lease time-to-live: a restart with the same owner continues a thread at most three quarters of it after a crash. @default 6000 */
  leaseTtlMs?: number;
  /** Tracing (`--trace`): see `openTracing`. */
  instrumentation?: Instrumentation;
}

/** The sample app's lease time-to-live: a restarted process or another worker continues a thread within 4.5 s of a crash. */
export const ASSISTANT_LEASE_TTL_MS = 6_000;

const SYSTEM_PROMPT = `You are the Lunation sample assistant, a helpful and concise assistant.
Use the calculator for any arithmetic, current_time for dates and times, read_file to read files the user
mentions (paths are relative to a sandbox folder; "." lists it), slow_task when asked for a slow job, and
ask_user when only the user can tell you something.
Tools named <server>__<tool> come from MCP servers the user configured.
If the user declines a tool call, accept it and carry on without it.`;

/**
 * The assistant: one agent with five tools and those of its MCP servers; reading a file, and an MCP tool that
 * does not say it is read-only, need the user's approval.
 */
export function createAssistantRuntime(options: AssistantRuntimeOptions): AgentRuntime {
  const builder = createRuntime();
  if (options.instrumentation) builder.instrumentation(options.instrumentation);
  return builder
    .model('main', options.model)
    .store(options.store)
    .agent({
      id: 'assistant',
      model: 'main',
      systemPrompt: SYSTEM_PROMPT,
      tools: [
        calculatorTool,
        currentTimeTool,
        createReadFileTool({ sandbox: options.sandbox }),
        createSlowTaskTool(options.slowTask),
        askUserTool,
        ...(options.mcpTools ?? []),
      ],
      plugins: [
        {
          plugin: permissionPlugin,
          config: {
            rules: [
              {
                tool: 'read_file',
                decision: 'ask',
                message: 'The assistant wants to read a file in the sandbox.',
              },
              {
                tool: '*__*',
                annotations: { readOnlyHint: false },
                decision: 'ask',
                message: 'The assistant wants to use an MCP tool that may change things.',
              },
            ],
          },
        },
      ],
      maxRounds: 12,
    })
    .options({
      leaseTtlMs: options.leaseTtlMs ?? ASSISTANT_LEASE_TTL_MS,
      ...(options.owner === undefined ? {} : { owner: options.owner }),
    })
    .build();
}

/** Gives the assistant agent a server's changed MCP tool list (its own tools stay). */
export function replaceMcpTools(runtime: AgentRuntime, mcpTools: readonly AnyTool[]): void {
  runtime.registry.update((set) => ({
    ...set,
    agents: set.agents.map((agent) =>
      agent.id !== 'assistant'
        ? agent
        : {
            ...agent,
            tools: [
              ...(agent.tools ?? []).filter(
                (tool) => typeof tool === 'string' || !tool.descriptor.name.includes('__'),
              ),
              ...mcpTools,
            ],
          },
    ),
  }));
}
