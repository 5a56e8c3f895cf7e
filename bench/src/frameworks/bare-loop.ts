import { type Harness, type HarnessOptions, Unavailable } from '../harness.js';
import { ADD_ARGUMENTS, ADD_TOOL_NAME, addInputSchema, FINAL_TEXT, type Script, USAGE } from '../script.js';

/**
 * The floor: a hand-written loop over a plain messages array. Model call, JSON-parse and zod-validate the
 * arguments, run the tool, append the result, repeat until the model answers without tool calls. No events,
 * no state, no persistence.
 */

interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

type BareMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls: ToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

interface ModelResponse {
  text: string;
  toolCalls: ToolCall[];
  usage: { inputTokens: number; outputTokens: number };
}

type StreamPart =
  | { type: 'text-delta'; delta: string }
  | { type: 'tool-call'; id: string; name: string; arguments: string }
  | { type: 'finish'; usage: { inputTokens: number; outputTokens: number } };

async function callModel(script: Script, messages: BareMessage[]): Promise<ModelResponse> {
  const turn = script.turn((messages[0] as { content: string }).content);
  if (turn.wait) await turn.wait;
  return turn.callTool
    ? {
        text: '',
        toolCalls: [{ id: turn.toolCallId, name: ADD_TOOL_NAME, arguments: ADD_ARGUMENTS }],
        usage: USAGE,
      }
    : { text: FINAL_TEXT, toolCalls: [], usage: USAGE };
}

async function* streamModel(script: Script, messages: BareMessage[]): AsyncGenerator<StreamPart> {
  const turn = script.turn((messages[0] as { content: string }).content);
  if (turn.wait) await turn.wait;
  if (turn.callTool)
    yield { type: 'tool-call', id: turn.toolCallId, name: ADD_TOOL_NAME, arguments: ADD_ARGUMENTS };
  else yield { type: 'text-delta', delta: FINAL_TEXT };
  yield { type: 'finish', usage: USAGE };
}

async function executeTool(script: Script, call: ToolCall): Promise<{ content: string; ok: boolean }> {
  if (call.name !== ADD_TOOL_NAME) return { content: `Unknown tool ${call.name}`, ok: false };
  const parsed = addInputSchema.safeParse(JSON.parse(call.arguments));
  if (!parsed.success) return { content: parsed.error.message, ok: false };
  return { content: JSON.stringify(script.add(parsed.data.a, parsed.data.b)), ok: true };
}

export async function createBareLoop(options: HarnessOptions): Promise<Harness> {
  const { script, mode } = options;
  if (options.store !== 'none') throw new Unavailable('the bare loop has no store');
  return {
    async run(steps) {
      const { key, input } = script.start(steps);
      let outputTokens = 0;
      const messages: BareMessage[] = [{ role: 'user', content: input }];
      let toolResults = 0;
      let streamedToolResults = 0;
      let modelSteps = 0;
      let finalText = '';
      for (;;) {
        modelSteps++;
        let text = '';
        let toolCalls: ToolCall[] = [];
        if (mode === 'stream') {
          for await (const part of streamModel(script, messages)) {
            if (part.type === 'text-delta') text += part.delta;
            else if (part.type === 'tool-call')
              toolCalls.push({ id: part.id, name: part.name, arguments: part.arguments });
            else outputTokens += part.usage.outputTokens;
          }
        } else {
          const response = await callModel(script, messages);
          text = response.text;
          toolCalls = response.toolCalls;
          outputTokens += response.usage.outputTokens;
        }
        messages.push({ role: 'assistant', content: text, toolCalls });
        finalText = text;
        if (toolCalls.length === 0) break;
        for (const call of toolCalls) {
          const result = await executeTool(script, call);
          if (result.ok) {
            toolResults++;
            if (mode === 'stream') streamedToolResults++;
          }
          messages.push({ role: 'tool', toolCallId: call.id, content: result.content });
        }
      }
      if (outputTokens !== modelSteps * USAGE.outputTokens)
        throw new Error(`bare loop: usage ${outputTokens}`);
      script.finish(key, {
        finalText,
        toolResults,
        steps: modelSteps,
        ...(mode === 'stream' ? { streamedToolResults } : {}),
      });
    },
    async close() {},
  };
}
