import type { HarnessFactory, StoreKind } from '../harness.js';

export type FrameworkId = 'bare' | 'lunation' | 'ai-sdk' | 'langgraph' | 'openai-agents';

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
    load: async () => (await import('./ai-sdk.js')).createAiSdk,
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
};
