import { W4_ANSWER, W4_MODEL } from './w4-stream.js';

/** One agent step (a user message in, the streamed answer out) against the W4 server at `baseURL`. */
export interface W4Harness {
  step(): Promise<void>;
  close(): Promise<void>;
}

export type W4FrameworkId = 'openai-sdk' | 'lunation' | 'ai-sdk' | 'openai-agents';

export interface W4Framework {
  id: W4FrameworkId;
  name: string;
  /** What one step calls. */
  api: string;
  create(baseURL: string): Promise<W4Harness>;
}

const API_KEY = 'sk-bench-w4';
const INPUT = 'What is the capital of France?';

function check(text: string, framework: string): void {
  if (text !== W4_ANSWER)
    throw new Error(`${framework} produced ${JSON.stringify(text)}, not the recorded answer`);
}

/** The vendor SDK alone: the floor every framework adds to. */
async function createOpenAISdk(baseURL: string): Promise<W4Harness> {
  const { default: OpenAI } = await import('openai');
  const client = new OpenAI({ apiKey: API_KEY, baseURL, maxRetries: 0 });
  return {
    async step() {
      const stream = await client.chat.completions.create({
        model: W4_MODEL,
        messages: [{ role: 'user', content: INPUT }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      check(text, 'openai SDK');
    },
    async close() {},
  };
}

/** Lunation: `runtime.run()` on a fresh thread, events consumed, with `OpenAIModel` (openai SDK). */
async function createLunation(baseURL: string): Promise<W4Harness> {
  const { createRuntime } = await import('@lunation/runtime');
  const { OpenAIModel } = await import('@lunation/provider-openai');
  const runtime = createRuntime()
    .model('main', new OpenAIModel({ model: W4_MODEL, apiKey: API_KEY, baseURL }))
    .agent({ id: 'assistant', model: 'main' })
    .build();
  let thread = 0;
  return {
    async step() {
      const handle = await runtime.run({ threadId: `w4-${thread++}`, input: INPUT });
      let text = '';
      for await (const event of handle.events) if (event.type === 'text-delta') text += event.delta;
      const result = await handle.result;
      if (result.status !== 'done') throw new Error(`Lunation run ended ${result.status}`);
      check(text, 'Lunation');
    },
    async close() {},
  };
}

/** Vercel AI SDK: `streamText()` with `@ai-sdk/openai`'s Chat Completions model, `fullStream` consumed. */
async function createAiSdk(baseURL: string): Promise<W4Harness> {
  const { streamText } = await import('ai');
  const { createOpenAI } = await import('@ai-sdk/openai');
  const provider = createOpenAI({ apiKey: API_KEY, baseURL });
  const model = provider.chat(W4_MODEL);
  return {
    async step() {
      const result = streamText({ model, prompt: INPUT, maxRetries: 0 });
      let text = '';
      for await (const part of result.fullStream) {
        if (part.type === 'text-delta') text += part.text;
        if (part.type === 'error') throw part.error;
      }
      check(text, 'AI SDK');
    },
    async close() {},
  };
}

/** OpenAI Agents JS: `Runner.run(agent, input, { stream: true })` with `OpenAIChatCompletionsModel`. */
async function createOpenAIAgents(baseURL: string): Promise<W4Harness> {
  const { Agent, OpenAIChatCompletionsModel, Runner } = await import('@openai/agents');
  const { default: OpenAI } = await import('openai');
  const client = new OpenAI({ apiKey: API_KEY, baseURL, maxRetries: 0 });
  const agent = new Agent({ name: 'assistant', model: new OpenAIChatCompletionsModel(client, W4_MODEL) });
  const runner = new Runner({ tracingDisabled: true });
  return {
    async step() {
      const streamed = await runner.run(agent, INPUT, { stream: true });
      let text = '';
      for await (const piece of streamed.toTextStream()) text += piece;
      await streamed.completed;
      if (streamed.error) throw streamed.error;
      check(text, 'OpenAI Agents JS');
    },
    async close() {},
  };
}

export const W4_FRAMEWORKS: Record<W4FrameworkId, W4Framework> = {
  'openai-sdk': {
    id: 'openai-sdk',
    name: 'openai SDK alone',
    api: 'client.chat.completions.create({ stream: true })',
    create: createOpenAISdk,
  },
  lunation: {
    id: 'lunation',
    name: 'Lunation',
    api: 'runtime.run() + events, OpenAIModel',
    create: createLunation,
  },
  'ai-sdk': {
    id: 'ai-sdk',
    name: 'Vercel AI SDK',
    api: 'streamText() fullStream, openai.chat()',
    create: createAiSdk,
  },
  'openai-agents': {
    id: 'openai-agents',
    name: 'OpenAI Agents JS',
    api: 'Runner.run({ stream: true }), OpenAIChatCompletionsModel',
    create: createOpenAIAgents,
  },
};
