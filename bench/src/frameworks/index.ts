import type { HarnessFactory, StoreKind } from '../harness.js';
import { packageVersion } from '../machine.js';

export type FrameworkId = 'bare' | 'lunation' | 'ai-sdk' | 'langgraph' | 'openai-agents' | 'mastra';

/**
 * Harnesses of frameworks the workspace does not install (Mastra, AI SDK 7 need Node 22+): they are type-checked
 * in the Node 24 run's install (bench/node24), so the workspace's type check must not follow the import.
 */
function importNode24Only<T>(specifier: string): Promise<T> {
  return import(specifier) as Promise<T>;
}

export interface Framework {
  readonly id: FrameworkId;
  readonly name: string;
  /** The package whose version is reported. */
  readonly packageName: string | undefined;
  /** The API used, per mode. */
  readonly api: { generate: string; stream: string };
  /** The store variants it has, and what each is called in this framework. */
  readonly stores: Partial<Record<StoreKind, string>>;
  load(): Promise<HarnessFactory>;
}

export const FRAMEWORKS: Record<FrameworkId, Framework> = {
  bare: {
    id: 'bare',
    name: 'bare loop',
    packageName: undefined,
    api: { generate: 'await model()', stream: 'for await (part of model())' },
    stores: { none: 'none' },
    load: async () => (await import('./bare-loop.js')).createBareLoop,
  },
  lunation: {
    id: 'lunation',
    name: 'Lunation',
    packageName: '@lunation/runtime',
    api: { generate: 'runtime.generate()', stream: 'runtime.run() + events' },
    stores: {
      none: 'none',
      memory: 'MemoryStore',
      sqlite: 'SqliteStore (file)',
      redis: 'RedisStore',
      postgres: 'PostgresStore',
      'postgres-async': 'PostgresStore (synchronous_commit off)',
    },
    load: async () => (await import('./lunation.js')).createLunation,
  },
  'ai-sdk': {
    id: 'ai-sdk',
    name: 'Vercel AI SDK',
    packageName: 'ai',
    api: { generate: 'generateText()', stream: 'streamText() fullStream' },
    stores: { none: 'none' },
    // AI SDK 7 gets a mock of its own model specification (LanguageModelV4); 6 the V3 one.
    load: async () =>
      Number.parseInt(packageVersion('ai'), 10) >= 7
        ? (await importNode24Only<{ createAiSdk: HarnessFactory }>('./ai-sdk-v7.js')).createAiSdk
        : (await import('./ai-sdk.js')).createAiSdk,
  },
  langgraph: {
    id: 'langgraph',
    name: 'LangGraph.js',
    packageName: '@langchain/langgraph',
    api: { generate: 'createReactAgent().invoke()', stream: "stream(['messages','values'])" },
    stores: { none: 'none', memory: 'MemorySaver', sqlite: 'SqliteSaver (file)' },
    load: async () => (await import('./langgraph.js')).createLangGraph,
  },
  'openai-agents': {
    id: 'openai-agents',
    name: 'OpenAI Agents JS',
    packageName: '@openai/agents',
    api: { generate: 'Runner.run()', stream: 'Runner.run({ stream: true })' },
    stores: { none: 'none' },
    load: async () => (await import('./openai-agents.js')).createOpenAiAgents,
  },
  mastra: {
    id: 'mastra',
    name: 'Mastra',
    packageName: '@mastra/core',
    api: { generate: 'agent.generate()', stream: 'agent.stream() fullStream' },
    stores: { none: 'none' },
    load: async () => (await importNode24Only<{ createMastra: HarnessFactory }>('./mastra.js')).createMastra,
  },
};
