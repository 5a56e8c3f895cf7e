import type { ModelProvider, ModelRequest, ModelStreamPart } from '@lunation/contract';
import { type AgentRuntime, createRuntime, defineTool, type RunResult } from '@lunation/runtime';
import type { Harness, HarnessOptions } from '../harness.js';
import { firstText } from '../harness.js';
import {
  ADD_ARGUMENTS,
  ADD_DESCRIPTION,
  ADD_TOOL_NAME,
  addInputSchema,
  FINAL_TEXT,
  type Script,
  USAGE,
} from '../script.js';
import { openStore } from '../stores.js';

const usagePart: ModelStreamPart = {
  type: 'usage',
  usage: { ...USAGE, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
};

/** A minimal Lunation ModelProvider that follows the script. */
export function scriptedModel(script: Script): ModelProvider {
  return {
    specificationVersion: 'v1',
    provider: 'bench',
    modelId: 'scripted',
    async *stream(request: ModelRequest): AsyncGenerator<ModelStreamPart> {
      const user = request.messages.find((message) => message.role === 'user');
      const turn = script.turn(firstText(user?.content));
      if (turn.wait) await turn.wait;
      if (turn.callTool) {
        yield { type: 'tool-call-start', toolCallId: turn.toolCallId, toolName: ADD_TOOL_NAME };
        yield {
          type: 'tool-call-end',
          toolCallId: turn.toolCallId,
          toolName: ADD_TOOL_NAME,
          arguments: ADD_ARGUMENTS,
        };
        yield usagePart;
        yield { type: 'finish', stopReason: 'tool-use' };
      } else {
        yield { type: 'text-delta', delta: FINAL_TEXT };
        yield usagePart;
        yield { type: 'finish', stopReason: 'end-turn' };
      }
    },
  };
}

export function addTool(script: Script) {
  return defineTool({
    name: ADD_TOOL_NAME,
    description: ADD_DESCRIPTION,
    input: addInputSchema,
    execute: async ({ a, b }) => script.add(a, b),
  });
}

/** Successful `add` results among the messages a run added. */
export function countToolResults(result: RunResult): number {
  let count = 0;
  for (const message of result.messages) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      const data = part.result.data as { sum?: unknown } | undefined;
      if (part.result.status === 'success' && data?.sum === 3) count++;
    }
  }
  return count;
}

export async function createLunation(options: HarnessOptions): Promise<Harness> {
  const { script, mode } = options;
  const store = options.storeInstance ?? (await openStore(options.store, options));
  const builder = createRuntime()
    .model('m', scriptedModel(script))
    .agent({ id: 'a', model: 'm', tools: [addTool(script)] });
  if (store) builder.store(store);
  if (options.instrumentation) builder.instrumentation(options.instrumentation);
  if (options.leaseTtlMs !== undefined) builder.options({ leaseTtlMs: options.leaseTtlMs });
  const runtime: AgentRuntime = builder.build();
  return {
    async run(steps) {
      const { key, input } = script.start(steps);
      let result: RunResult;
      let streamedToolResults: number | undefined;
      if (mode === 'stream') {
        const handle = await runtime.run({ threadId: key, input });
        streamedToolResults = 0;
        for await (const event of handle.events) {
          if (event.type === 'tool-result' && event.status === 'succeeded') streamedToolResults++;
        }
        result = await handle.result;
      } else {
        result = await runtime.generate({ threadId: key, input });
      }
      if (result.status !== 'done') {
        throw new Error(`Lunation run ${key} ended ${result.status}: ${JSON.stringify(result.termination)}`);
      }
      script.finish(key, {
        finalText: result.finalText,
        toolResults: countToolResults(result),
        steps: result.steps,
        ...(streamedToolResults === undefined ? {} : { streamedToolResults }),
      });
    },
    async close() {
      await runtime.drain();
      if (!options.storeInstance) await store?.close();
    },
  };
}
