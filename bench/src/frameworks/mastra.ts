import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { type Harness, type HarnessOptions, Unavailable } from '../harness.js';
import { ADD_DESCRIPTION, ADD_TOOL_NAME, addInputSchema } from '../script.js';
import { forgetCalls, scriptedModelV4 } from './ai-sdk-v7.js';

type AgentModel = ConstructorParameters<typeof Agent>[0]['model'];

/** Successful `add` results: Mastra wraps each in a chunk whose `payload.result` is the tool's output. */
function countSums(results: ReadonlyArray<unknown> | undefined): number {
  let count = 0;
  for (const item of results ?? []) {
    const chunk = item as { payload?: { result?: { sum?: unknown } }; output?: { sum?: unknown } };
    if ((chunk.payload?.result ?? chunk.output)?.sum === 3) count++;
  }
  return count;
}

/**
 * Mastra: an `Agent` with no memory or storage, the AI SDK's `MockLanguageModelV4` following the script (Mastra
 * takes AI SDK models) and a `createTool()` tool with the zod schema; `generate()` with `maxSteps: S`, or
 * `stream()` consuming `fullStream`.
 */
export async function createMastra(options: HarnessOptions): Promise<Harness> {
  const { script, mode } = options;
  if (options.store !== 'none') throw new Unavailable('not measured (Mastra storage not set up)');
  const model = scriptedModelV4(script);
  const add = createTool({
    id: ADD_TOOL_NAME,
    description: ADD_DESCRIPTION,
    inputSchema: addInputSchema,
    execute: async ({ a, b }) => script.add(a, b),
  });
  const agent = new Agent({
    id: 'bench',
    name: 'bench',
    instructions: '',
    // Mastra types AI SDK models against its own copy of @ai-sdk/provider's types; at run time it takes this one.
    model: model as unknown as AgentModel,
    tools: { [ADD_TOOL_NAME]: add },
  });
  return {
    async run(steps) {
      const { key, input } = script.start(steps);
      if (mode === 'stream') {
        const output = await agent.stream(input, { maxSteps: steps });
        let streamedToolResults = 0;
        for await (const part of output.fullStream) {
          if (part.type === 'tool-result') streamedToolResults += countSums([part]);
          else if (part.type === 'error') throw (part.payload as { error?: unknown }).error ?? part;
        }
        const finalSteps = await output.steps;
        script.finish(key, {
          finalText: await output.text,
          toolResults: finalSteps.reduce((total, step) => total + countSums(step.toolResults), 0),
          steps: finalSteps.length,
          streamedToolResults,
        });
      } else {
        const result = await agent.generate(input, { maxSteps: steps });
        script.finish(key, {
          finalText: result.text,
          toolResults: countSums(result.toolResults),
          steps: result.steps.length,
        });
      }
      forgetCalls(script, model);
    },
    async close() {},
  };
}
