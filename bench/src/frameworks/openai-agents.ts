import {
  Agent,
  type AgentInputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type RunItem,
  Runner,
  type StreamEvent,
  tool,
  Usage,
} from '@openai/agents';
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

function inputText(input: string | AgentInputItem[]): string {
  if (typeof input === 'string') return input;
  const user = input.find((item) => 'role' in item && item.role === 'user') as
    | { content?: unknown }
    | undefined;
  return firstText(user?.content);
}

function output(turn: Turn): ModelResponse['output'] {
  return turn.callTool
    ? [
        {
          type: 'function_call',
          callId: turn.toolCallId,
          name: ADD_TOOL_NAME,
          arguments: ADD_ARGUMENTS,
          status: 'completed',
        },
      ]
    : [
        {
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: FINAL_TEXT }],
        },
      ];
}

const usage = () =>
  new Usage({
    requests: 1,
    inputTokens: USAGE.inputTokens,
    outputTokens: USAGE.outputTokens,
    totalTokens: USAGE.inputTokens + USAGE.outputTokens,
  });

type ResponseDone = Extract<StreamEvent, { type: 'response_done' }>;

/** A `Model` implementation that follows the script. */
class ScriptedModel implements Model {
  constructor(private readonly script: Script) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const turn = this.script.turn(inputText(request.input));
    if (turn.wait) await turn.wait;
    return { usage: usage(), output: output(turn), responseId: turn.toolCallId };
  }

  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    const turn = this.script.turn(inputText(request.input));
    if (turn.wait) await turn.wait;
    yield { type: 'response_started' };
    if (!turn.callTool) yield { type: 'output_text_delta', delta: FINAL_TEXT };
    const done = usage();
    yield {
      type: 'response_done',
      response: {
        id: turn.toolCallId,
        usage: {
          requests: done.requests,
          inputTokens: done.inputTokens,
          outputTokens: done.outputTokens,
          totalTokens: done.totalTokens,
        },
        output: output(turn) as ResponseDone['response']['output'],
      },
    };
  }
}

/**
 * OpenAI Agents JS: `Runner.run()` (tracing disabled, as no exporter is reachable here) with a scripted `Model`
 * and a `tool()` with the zod schema; `stream` consumes the `StreamedRunResult`'s events.
 */
export async function createOpenAiAgents(options: HarnessOptions): Promise<Harness> {
  const { script, mode } = options;
  if (options.store !== 'none') throw new Unavailable('OpenAI Agents JS has no store here');
  const add = tool({
    name: ADD_TOOL_NAME,
    description: ADD_DESCRIPTION,
    parameters: addInputSchema,
    execute: async ({ a, b }) => script.add(a, b),
  });
  const agent = new Agent({
    name: 'bench',
    instructions: '',
    model: new ScriptedModel(script),
    tools: [add],
  });
  const runner = new Runner({ tracingDisabled: true });
  return {
    async run(steps) {
      const { key, input } = script.start(steps);
      let streamedToolResults: number | undefined;
      let result: { newItems: RunItem[]; rawResponses: ModelResponse[]; finalOutput?: unknown };
      if (mode === 'stream') {
        const streamed = await runner.run(agent, input, { stream: true, maxTurns: steps + 1 });
        streamedToolResults = 0;
        for await (const event of streamed) {
          if (
            event.type === 'run_item_stream_event' &&
            event.item.type === 'tool_call_output_item' &&
            isSum(event.item.output)
          )
            streamedToolResults++;
        }
        await streamed.completed;
        if (streamed.error) throw streamed.error;
        result = streamed;
      } else {
        result = await runner.run(agent, input, { maxTurns: steps + 1 });
      }
      let toolResults = 0;
      for (const item of result.newItems) {
        if (item.type === 'tool_call_output_item' && isSum(item.output)) toolResults++;
      }
      script.finish(key, {
        finalText: typeof result.finalOutput === 'string' ? result.finalOutput : '',
        toolResults,
        steps: result.rawResponses.length,
        ...(streamedToolResults === undefined ? {} : { streamedToolResults }),
      });
    },
    async close() {},
  };
}

function isSum(value: unknown): boolean {
  if (typeof value === 'string') return (JSON.parse(value) as { sum?: unknown }).sum === 3;
  return (value as { sum?: unknown } | undefined)?.sum === 3;
}
