import type { Usage } from '@lunation/contract';
import {
  type ProviderWire,
  type ScriptedEvent,
  type ScriptedStream,
  scriptedStopReason,
  type WireCapabilities,
} from '../provider-wire.js';
import type { HttpBodyStep, HttpResponseScript } from '../scripted-server.js';
import { type StructuredOutputConformance, structuredOutputSchema } from '../structured-output-specs.js';

/**
 * An Ollama-style `/api/chat` wire: newline-delimited JSON, one object per line; `message.content` and
 * `message.thinking` pieces; each tool call whole, with its arguments as a JSON object; a last line with
 * `done: true`, `done_reason` and `prompt_eval_count` / `eval_count` (no cache or reasoning counts). Errors are
 * `{"error": "..."}`, as an HTTP body or as a line inside the stream.
 */
const model = 'qwen3:8b';
const createdAt = '2025-05-27T22:54:57.641643Z';

function line(fields: Record<string, unknown>): string {
  return `${JSON.stringify({ model, created_at: createdAt, ...fields })}\n`;
}

function messageLine(message: Record<string, unknown>): string {
  return line({ message: { role: 'assistant', content: '', ...message }, done: false });
}

function groupCalls(events: readonly ScriptedEvent[]): { id: string; name: string; text: string }[] {
  const calls = new Map<string, { id: string; name: string; text: string }>();
  for (const event of events) {
    if (event.type === 'tool-call-start')
      calls.set(event.toolCallId, { id: event.toolCallId, name: event.toolName, text: '' });
    else if (event.type === 'tool-call-delta') {
      const call = calls.get(event.toolCallId);
      if (call) call.text += event.argumentsDelta;
    }
  }
  return [...calls.values()];
}

function encodeStream(stream: ScriptedStream): HttpResponseScript {
  const steps: HttpBodyStep[] = [];
  const push = (text: string) => {
    if (stream.delayMs !== undefined) steps.push({ delayMs: stream.delayMs });
    steps.push(text);
  };
  let callsSent = false;
  let index = 0;
  for (const event of stream.events) {
    if (event.type === 'text') push(messageLine({ content: event.text }));
    else if (event.type === 'reasoning') push(messageLine({ thinking: event.text }));
    else if ((event.type === 'tool-call-start' || event.type === 'tool-call-delta') && !callsSent) {
      callsSent = true;
      for (const call of groupCalls(stream.events)) {
        let args: unknown;
        try {
          args = JSON.parse(call.text);
        } catch {
          continue; // An unfinished call: this wire only sends whole calls.
        }
        push(
          messageLine({
            tool_calls: [{ id: call.id, function: { index: index++, name: call.name, arguments: args } }],
          }),
        );
      }
    }
  }
  const ending = stream.ending ?? 'complete';
  if (ending === 'complete') {
    const usage: Usage = stream.usage ?? {
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    };
    const stopReason = scriptedStopReason(stream);
    push(
      line({
        message: { role: 'assistant', content: '' },
        done: true,
        done_reason: stopReason === 'max-tokens' ? 'length' : 'stop',
        total_duration: 4_883_583_458,
        load_duration: 1_334_875,
        prompt_eval_count: usage.inputTokens,
        prompt_eval_duration: 342_546_000,
        eval_count: usage.outputTokens,
        eval_duration: 4_535_599_000,
      }),
    );
  }
  return {
    status: 200,
    headers: { 'content-type': 'application/x-ndjson', ...stream.headers },
    body: steps,
    ending: ending === 'complete' || ending === 'close' ? 'end' : ending,
  };
}

export const ndjsonChatCapabilities: WireCapabilities = {
  reasoning: true,
  reasoningSignature: false,
  redactedReasoning: false,
  interleavedToolCalls: false,
  stopReasons: ['end-turn', 'max-tokens', 'tool-use'],
  toolCallArguments: 'whole',
  unreportedUsage: ['cacheReadTokens', 'cacheWriteTokens', 'reasoningTokens'],
};

/** The wire with its capabilities; tests of the kit itself may declare different ones. */
export function ndjsonChatWire(capabilities: WireCapabilities = ndjsonChatCapabilities): ProviderWire {
  return {
    encode: (response) =>
      response.type === 'stream'
        ? encodeStream(response)
        : {
            status: response.status,
            headers: { 'content-type': 'application/json; charset=utf-8', ...response.headers },
            body: JSON.stringify({
              error:
                response.message ??
                (response.contextOverflow
                  ? 'the input length exceeds the context length'
                  : `model "${model}" failed with status ${response.status}`),
            }),
          },
    capabilities,
  };
}

/** Ollama's `format` takes the JSON schema as it is. */
export const ndjsonChatStructuredOutput: StructuredOutputConformance = {
  sentSchema: structuredOutputSchema,
  requestFields: (schema) => ({ format: schema }),
};
