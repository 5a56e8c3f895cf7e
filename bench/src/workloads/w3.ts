import type { LunationStore, ModelProvider, ModelRequest, ModelStreamPart } from '@lunation/contract';
import { type AgentRuntime, createRuntime, definePlugin, defineTool } from '@lunation/runtime';
import type { BenchConfig } from '../config.js';
import { fullGc, type MemorySample, memory, pool } from '../measure.js';
import type { W3Result, W3Store } from '../results.js';
import { ADD_ARGUMENTS, ADD_DESCRIPTION, ADD_TOOL_NAME, addInputSchema, FINAL_TEXT } from '../script.js';
import { openStore } from '../stores.js';
import type { Scratch } from './scratch.js';

const usage = {
  inputTokens: 10,
  outputTokens: 5,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};

/** Calls `add` when the last message is the user's, answers "done" after the tool result: stateless. */
function approvalModel(counter: { calls: number }): ModelProvider {
  return {
    specificationVersion: 'v1',
    provider: 'bench',
    modelId: 'scripted',
    async *stream(request: ModelRequest): AsyncGenerator<ModelStreamPart> {
      counter.calls++;
      const last = request.messages.at(-1);
      if (last?.role === 'user') {
        const toolCallId = `call_${counter.calls}`;
        yield { type: 'tool-call-start', toolCallId, toolName: ADD_TOOL_NAME };
        yield { type: 'tool-call-end', toolCallId, toolName: ADD_TOOL_NAME, arguments: ADD_ARGUMENTS };
        yield { type: 'usage', usage };
        yield { type: 'finish', stopReason: 'tool-use' };
      } else if (last?.role === 'tool') {
        yield { type: 'text-delta', delta: FINAL_TEXT };
        yield { type: 'usage', usage };
        yield { type: 'finish', stopReason: 'end-turn' };
      } else {
        throw new Error(`approval model: unexpected last message ${last?.role}`);
      }
    },
  };
}

/** Suspends every call for approval; a resumed call is replayed without passing the gate again. */
const approvalGate = definePlugin({
  name: 'bench-approval',
  register(registrar) {
    registrar.toolGate(() => ({ type: 'suspend', ticket: { message: 'approve?' } }));
  },
});

function build(store: LunationStore, counters: { model: { calls: number }; tools: { calls: number } }) {
  const add = defineTool({
    name: ADD_TOOL_NAME,
    description: ADD_DESCRIPTION,
    input: addInputSchema,
    execute: ({ a, b }) => {
      counters.tools.calls++;
      return { sum: a + b };
    },
  });
  return createRuntime()
    .model('m', approvalModel(counters.model))
    .agent({ id: 'a', model: 'm', tools: [add], plugins: [approvalGate] })
    .store(store)
    .build();
}

/**
 * W3: N threads each left holding a run suspended on an approval in the store (runtime A), then every one
 * resumed with an approval by a fresh runtime on a fresh store connection (runtime B), as another process
 * would. Reports both rates and the process's memory with all N suspended.
 */
export async function runW3(
  store: W3Store,
  config: BenchConfig,
  scratch: Scratch,
): Promise<Pick<W3Result, 'suspend' | 'resume' | 'memory'>> {
  const { threads, concurrency } = config.w3;
  const settings = {
    workDir: scratch.dir,
    redisUrl: scratch.redisUrl,
    redisKeyPrefix: `${scratch.prefix}:`,
    fileName: 'w3.sqlite',
  };
  const counters = { model: { calls: 0 }, tools: { calls: 0 } };
  const threadId = (index: number) => `${scratch.runPrefix}${index}`;
  const tickets: string[] = new Array(threads);

  const suspendOne = async (runtime: AgentRuntime, index: number) => {
    const result = await runtime.generate({ threadId: threadId(index), input: `go #${index}` });
    const ticket = result.openTickets[0];
    if (result.status !== 'waiting' || result.openTickets.length !== 1 || !ticket || result.steps !== 1) {
      throw new Error(
        `W3 thread ${index}: expected a run waiting on 1 ticket after 1 step, got ${result.status}`,
      );
    }
    tickets[index] = ticket.id;
  };
  const resumeOne = async (runtime: AgentRuntime, index: number) => {
    const ticketId = tickets[index] as string;
    const result = await runtime.generate({
      threadId: threadId(index),
      decisions: [{ decisionId: `d${index}`, ticketId, action: 'resume' }],
    });
    const toolMessage = result.messages.find((message) => message.role === 'tool');
    const sum = (toolMessage?.content[0]?.result.data as { sum?: number } | undefined)?.sum;
    if (result.status !== 'done' || result.finalText !== FINAL_TEXT || result.steps !== 2 || sum !== 3) {
      throw new Error(
        `W3 thread ${index}: expected done/"done" after 2 steps with sum 3, got ${result.status}/${JSON.stringify(result.finalText)} after ${result.steps} (sum ${sum})`,
      );
    }
  };

  // Warm-up on a separate set of threads, so the code is compiled before the baseline.
  const warmupStore = await openStore(store, {
    ...settings,
    fileName: 'w3-warmup.sqlite',
    redisKeyPrefix: `${scratch.prefix}:warmup:`,
  });
  if (!warmupStore) throw new Error('no store');
  const warmupRuntime = build(warmupStore, counters);
  const warmup = Math.min(200, threads);
  await pool(warmup, concurrency, (index) => suspendOne(warmupRuntime, index));
  // (The warm-up threads share ids with the measured ones, in a store of their own.)
  await pool(warmup, concurrency, (index) => resumeOne(warmupRuntime, index));
  await warmupStore.close();
  const warmupModelCalls = counters.model.calls;
  const warmupToolCalls = counters.tools.calls;

  fullGc();
  const baseline = memory();

  const storeA = await openStore(store, settings);
  if (!storeA) throw new Error('no store');
  const runtimeA = build(storeA, counters);
  let started = performance.now();
  await pool(threads, concurrency, (index) => suspendOne(runtimeA, index));
  const suspendSeconds = (performance.now() - started) / 1000;
  fullGc();
  const suspended = memory();
  await runtimeA.drain();
  await storeA.close();

  const storeB = await openStore(store, settings);
  if (!storeB) throw new Error('no store');
  const runtimeB = build(storeB, counters);
  let resumePeakRss = memory().rss;
  const sampler = setInterval(() => {
    resumePeakRss = Math.max(resumePeakRss, process.memoryUsage.rss());
  }, 25);
  started = performance.now();
  try {
    await pool(threads, concurrency, (index) => resumeOne(runtimeB, index));
  } finally {
    clearInterval(sampler);
  }
  const resumeSeconds = (performance.now() - started) / 1000;
  resumePeakRss = Math.max(resumePeakRss, process.memoryUsage.rss());
  await runtimeB.drain();
  await storeB.close();
  fullGc();
  const resumed: MemorySample = memory();

  const modelCalls = counters.model.calls - warmupModelCalls;
  const toolCalls = counters.tools.calls - warmupToolCalls;
  if (modelCalls !== 2 * threads || toolCalls !== threads) {
    throw new Error(
      `W3: expected ${2 * threads} model calls and ${threads} tool executions, got ${modelCalls} and ${toolCalls}`,
    );
  }
  return {
    suspend: { seconds: suspendSeconds, perSecond: threads / suspendSeconds },
    resume: { seconds: resumeSeconds, perSecond: threads / resumeSeconds },
    memory: { baseline, suspended, resumePeakRss, resumed },
  };
}
