import type {
  LanguageModelV4CallOptions,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
} from '@ai-sdk/provider';
import { generateText, isStepCount, streamText, tool } from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { firstText, type Harness, type HarnessOptions, Unavailable } from '../harness.js';
import {
  ADD_ARGUMENTS,
  ADD_DESCRIPTION,
  ADD_TOOL_NAME,
  addInputSchema,
  FINAL_TEXT,
  type Script,
  type Turn,
  USAGE,
} from '../script.js';

const usage: LanguageModelV4Usage = {
  inputTokens: {
    total: USAGE.inputTokens,
    noCache: USAGE.inputTokens,
    cacheRead: undefined,
    cacheWrite: undefined,
  },
  outputTokens: { total: USAGE.outputTokens, text: USAGE.outputTokens, reasoning: undefined },
};

function inputText(options: LanguageModelV4CallOptions): string {
  const user = options.prompt.find((message) => message.role === 'user');
  return firstText(user?.content);
}

function generateResult(turn: Turn): LanguageModelV4GenerateResult {
  return turn.callTool
    ? {
        content: [
          { type: 'tool-call', toolCallId: turn.toolCallId, toolName: ADD_TOOL_NAME, input: ADD_ARGUMENTS },
        ],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      }
    : {
        content: [{ type: 'text', text: FINAL_TEXT }],
        finishReason: { unified: 'stop', raw: undefined },
        usage,
        warnings: [],
      };
}

function streamParts(turn: Turn): LanguageModelV4StreamPart[] {
  return turn.callTool
    ? [
        { type: 'stream-start', warnings: [] },
        { type: 'tool-call', toolCallId: turn.toolCallId, toolName: ADD_TOOL_NAME, input: ADD_ARGUMENTS },
        { type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage },
      ]
    : [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: FINAL_TEXT },
        { type: 'text-end', id: 't' },
        { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage },
      ];
}

/** A `MockLanguageModelV4` (from `ai/test`) that follows the script; shared with the Mastra harness. */
export function scriptedModelV4(script: Script): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    doGenerate: async (call) => {
      const turn = script.turn(inputText(call));
      if (turn.wait) await turn.wait;
      return generateResult(turn);
    },
    doStream: async (call) => {
      const turn = script.turn(inputText(call));
      if (turn.wait) await turn.wait;
      return { stream: convertArrayToReadableStream(streamParts(turn)) };
    },
  });
}

/** The mock records every call; drop the records so memory does not grow with the number of runs. */
export function forgetCalls(script: Script, model: MockLanguageModelV4): void {
  if (script.openRuns === 0) {
    model.doGenerateCalls.length = 0;
    model.doStreamCalls.length = 0;
  }
}

/**
 * Vercel AI SDK 7: `generateText` / `streamText` with `MockLanguageModelV4` from `ai/test` following the script,
 * one `tool()` with the zod schema, and `stopWhen: isStepCount(S)`.
 */
export async function createAiSdk(options: HarnessOptions): Promise<Harness> {
  const { script, mode } = options;
  if (options.store !== 'none') throw new Unavailable('the AI SDK has no store');
  const model = scriptedModelV4(script);
  const tools = {
    [ADD_TOOL_NAME]: tool({
      description: ADD_DESCRIPTION,
      inputSchema: addInputSchema,
      execute: async ({ a, b }) => script.add(a, b),
    }),
  };
  return {
    async run(steps) {
      const { key, input } = script.start(steps);
      if (mode === 'stream') {
        const result = streamText({ model, tools, stopWhen: isStepCount(steps), prompt: input });
        let streamedToolResults = 0;
        for await (const part of result.fullStream) {
          if (part.type === 'tool-result') {
            if ((part.output as { sum?: unknown }).sum === 3) streamedToolResults++;
          } else if (part.type === 'error') throw part.error;
        }
        const finalSteps = await result.steps;
        script.finish(key, {
          finalText: await result.text,
          toolResults: countToolResults(finalSteps),
          steps: finalSteps.length,
          streamedToolResults,
        });
      } else {
        const result = await generateText({ model, tools, stopWhen: isStepCount(steps), prompt: input });
        script.finish(key, {
          finalText: result.text,
          toolResults: countToolResults(result.steps),
          steps: result.steps.length,
        });
      }
      forgetCalls(script, model);
    },
    async close() {},
  };
}

function countToolResults(steps: ReadonlyArray<{ toolResults: ReadonlyArray<{ output: unknown }> }>): number {
  let count = 0;
  for (const step of steps) {
    for (const result of step.toolResults) if ((result.output as { sum?: unknown }).sum === 3) count++;
  }
  return count;
}
