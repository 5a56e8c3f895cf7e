import { join } from 'node:path';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, AIMessageChunk, type BaseMessage, HumanMessage } from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';
import { tool } from '@langchain/core/tools';
import { MemorySaver } from '@langchain/langgraph';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
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

const usageMetadata = {
  input_tokens: USAGE.inputTokens,
  output_tokens: USAGE.outputTokens,
  total_tokens: USAGE.inputTokens + USAGE.outputTokens,
};

/** A tool-calling chat model that follows the script; arguments are JSON-parsed as a provider would. */
class ScriptedChatModel extends BaseChatModel {
  constructor(private readonly script: Script) {
    super({});
  }

  _llmType(): string {
    return 'scripted';
  }

  override bindTools(): this {
    return this;
  }

  private turn(messages: BaseMessage[]): Turn {
    return this.script.turn(firstText(messages[0]?.content));
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const turn = this.turn(messages);
    if (turn.wait) await turn.wait;
    const message = turn.callTool
      ? new AIMessage({
          content: '',
          tool_calls: [
            { id: turn.toolCallId, name: ADD_TOOL_NAME, args: JSON.parse(ADD_ARGUMENTS), type: 'tool_call' },
          ],
          usage_metadata: usageMetadata,
        })
      : new AIMessage({ content: FINAL_TEXT, usage_metadata: usageMetadata });
    return { generations: [{ text: turn.callTool ? '' : FINAL_TEXT, message }] };
  }

  override async *_streamResponseChunks(messages: BaseMessage[]): AsyncGenerator<ChatGenerationChunk> {
    const turn = this.turn(messages);
    if (turn.wait) await turn.wait;
    const message = turn.callTool
      ? new AIMessageChunk({
          content: '',
          tool_call_chunks: [
            {
              id: turn.toolCallId,
              name: ADD_TOOL_NAME,
              args: ADD_ARGUMENTS,
              index: 0,
              type: 'tool_call_chunk',
            },
          ],
          usage_metadata: usageMetadata,
        })
      : new AIMessageChunk({ content: FINAL_TEXT, usage_metadata: usageMetadata });
    yield new ChatGenerationChunk({ text: turn.callTool ? '' : FINAL_TEXT, message });
  }
}

function isToolResult(message: BaseMessage): boolean {
  if (message.getType() !== 'tool') return false;
  const content = message.content;
  return typeof content === 'string' && (JSON.parse(content) as { sum?: unknown }).sum === 3;
}

/**
 * LangGraph.js: the prebuilt ReAct agent (`createReactAgent`) with a scripted tool-calling chat model and a
 * `tool()` with the zod schema; without a checkpointer, with `MemorySaver`, or with `SqliteSaver` on a file.
 * `generate` is `invoke`; `stream` is `stream` with `streamMode: ['messages', 'values']`.
 */
export async function createLangGraph(options: HarnessOptions): Promise<Harness> {
  const { script, mode } = options;
  let checkpointer: MemorySaver | SqliteSaver | undefined;
  if (options.store === 'memory') checkpointer = new MemorySaver();
  else if (options.store === 'sqlite') {
    const saver = SqliteSaver.fromConnString(join(options.workDir, 'langgraph.sqlite'));
    // Same durability as Lunation's SqliteStore (WAL, synchronous=NORMAL); SqliteSaver sets WAL itself.
    saver.db.pragma('synchronous = NORMAL');
    checkpointer = saver;
  } else if (options.store === 'redis')
    throw new Unavailable('not measured (LangGraph Redis saver not set up)');
  const add = tool(async ({ a, b }) => script.add(a, b), {
    name: ADD_TOOL_NAME,
    description: ADD_DESCRIPTION,
    schema: addInputSchema,
  });
  const agent = createReactAgent({
    llm: new ScriptedChatModel(script),
    tools: [add],
    ...(checkpointer ? { checkpointer } : {}),
  });
  return {
    async run(steps) {
      const { key, input } = script.start(steps);
      const config = { configurable: { thread_id: key } };
      let messages: BaseMessage[];
      let streamedToolResults: number | undefined;
      if (mode === 'stream') {
        streamedToolResults = 0;
        let last: { messages: BaseMessage[] } | undefined;
        const stream = await agent.stream(
          { messages: [new HumanMessage(input)] },
          { ...config, streamMode: ['messages', 'values'] },
        );
        for await (const [kind, chunk] of stream) {
          if (kind === 'messages') {
            const [message] = chunk as [BaseMessage, unknown];
            if (isToolResult(message)) streamedToolResults++;
          } else if (kind === 'values') last = chunk as { messages: BaseMessage[] };
        }
        if (!last) throw new Error('LangGraph stream ended without a state');
        messages = last.messages;
      } else {
        const state = await agent.invoke({ messages: [new HumanMessage(input)] }, config);
        messages = state.messages;
      }
      let toolResults = 0;
      let modelSteps = 0;
      for (const message of messages) {
        if (isToolResult(message)) toolResults++;
        else if (message.getType() === 'ai') modelSteps++;
      }
      const final = messages.at(-1);
      script.finish(key, {
        finalText: final?.getType() === 'ai' && typeof final.content === 'string' ? final.content : '',
        toolResults,
        steps: modelSteps,
        ...(streamedToolResults === undefined ? {} : { streamedToolResults }),
      });
    },
    async close() {
      if (checkpointer instanceof SqliteSaver) checkpointer.db.close();
    },
  };
}
