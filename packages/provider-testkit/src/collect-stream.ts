import { type ModelStreamPart, modelStreamPartSchema, type StopReason, type Usage } from '@lunation/contract';

/** Everything a model stream yielded, and what it threw (if anything). */
export interface CollectedStream {
  parts: ModelStreamPart[];
  error: unknown;
}

/** Reads a model stream to its end; a thrown error is captured, not rethrown. */
export async function collectStream(
  stream: AsyncIterable<ModelStreamPart>,
  onPart?: (part: ModelStreamPart, index: number) => void,
): Promise<CollectedStream> {
  const parts: ModelStreamPart[] = [];
  try {
    for await (const part of stream) {
      parts.push(part);
      onPart?.(part, parts.length - 1);
    }
    return { parts, error: undefined };
  } catch (error) {
    return { parts, error };
  }
}

/** One tool call of a stream, as its parts told it. */
export interface SummarizedToolCall {
  toolCallId: string;
  toolName: string;
  /** The `arguments` of the call's `tool-call-end` part (undefined when it never ended). */
  arguments: string | undefined;
  /** The concatenated `tool-call-delta` pieces. */
  streamedArguments: string;
  deltaCount: number;
}

/** One reasoning block of a stream. */
export interface SummarizedReasoning {
  text: string;
  signature?: string;
  redacted?: boolean;
}

/** What a stream's parts add up to. */
export interface StreamSummary {
  text: string;
  /** Reasoning blocks: a signature or a redacted part closes a block. */
  reasoning: SummarizedReasoning[];
  toolCalls: SummarizedToolCall[];
  usage: Usage | undefined;
  stopReason: StopReason | undefined;
  rawStopReason: string | undefined;
  /** Part types in order, e.g. `['text-delta', 'usage', 'finish']`. */
  types: ModelStreamPart['type'][];
}

/** Adds up a stream's parts. */
export function summarizeParts(parts: readonly ModelStreamPart[]): StreamSummary {
  const summary: StreamSummary = {
    text: '',
    reasoning: [],
    toolCalls: [],
    usage: undefined,
    stopReason: undefined,
    rawStopReason: undefined,
    types: parts.map((part) => part.type),
  };
  let openReasoning: SummarizedReasoning | undefined;
  const calls = new Map<string, SummarizedToolCall>();
  for (const part of parts) {
    switch (part.type) {
      case 'text-delta':
        summary.text += part.delta;
        break;
      case 'reasoning-delta': {
        if (part.redacted) {
          openReasoning = undefined;
          summary.reasoning.push({ text: part.delta, redacted: true });
          break;
        }
        if (openReasoning === undefined) {
          openReasoning = { text: '' };
          summary.reasoning.push(openReasoning);
        }
        openReasoning.text += part.delta;
        if (part.signature !== undefined) {
          openReasoning.signature = part.signature;
          openReasoning = undefined;
        }
        break;
      }
      case 'tool-call-start': {
        const call: SummarizedToolCall = {
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          arguments: undefined,
          streamedArguments: '',
          deltaCount: 0,
        };
        calls.set(part.toolCallId, call);
        summary.toolCalls.push(call);
        break;
      }
      case 'tool-call-delta': {
        const call = calls.get(part.toolCallId);
        if (call) {
          call.streamedArguments += part.argumentsDelta;
          call.deltaCount += 1;
        }
        break;
      }
      case 'tool-call-end': {
        const call = calls.get(part.toolCallId);
        if (call) call.arguments = part.arguments;
        break;
      }
      case 'usage':
        summary.usage = part.usage;
        break;
      case 'finish':
        summary.stopReason = part.stopReason;
        summary.rawStopReason = part.rawStopReason;
        break;
    }
  }
  return summary;
}

/**
 * Throws when the parts break the contract's stream rules: every part matches its schema; tool-call
 * deltas and ends follow their start, and an end's `arguments` equal the streamed pieces; at most one
 * `usage`, after all content; at most one `finish`, last, with every started call ended before it.
 */
export function assertStreamInvariants(parts: readonly ModelStreamPart[]): void {
  const fail = (index: number, problem: string): never => {
    throw new Error(
      `Stream part #${index} (${JSON.stringify(parts[index])}) breaks the contract: ${problem}`,
    );
  };
  const open = new Map<string, { toolName: string; streamed: string }>();
  const ended = new Set<string>();
  let usageSeen = false;
  let finishSeen = false;
  parts.forEach((part, index) => {
    if (!modelStreamPartSchema.safeParse(part).success)
      fail(index, 'it does not match modelStreamPartSchema');
    if (finishSeen) fail(index, 'a part came after `finish`');
    const isContent = part.type !== 'usage' && part.type !== 'finish';
    if (isContent && usageSeen) fail(index, 'content came after `usage`');
    switch (part.type) {
      case 'tool-call-start':
        if (open.has(part.toolCallId) || ended.has(part.toolCallId)) fail(index, 'the call id started twice');
        open.set(part.toolCallId, { toolName: part.toolName, streamed: '' });
        break;
      case 'tool-call-delta': {
        const call = open.get(part.toolCallId);
        if (!call) fail(index, 'a delta for a call that is not open');
        else call.streamed += part.argumentsDelta;
        break;
      }
      case 'tool-call-end': {
        const call = open.get(part.toolCallId);
        if (!call) {
          fail(index, 'an end for a call that is not open');
          break;
        }
        if (call.toolName !== part.toolName)
          fail(index, `the end names tool "${part.toolName}", the start "${call.toolName}"`);
        if (call.streamed !== part.arguments) {
          fail(index, `the end's arguments differ from the streamed pieces ${JSON.stringify(call.streamed)}`);
        }
        open.delete(part.toolCallId);
        ended.add(part.toolCallId);
        break;
      }
      case 'usage':
        if (usageSeen) fail(index, 'a second `usage`');
        usageSeen = true;
        break;
      case 'finish':
        if (open.size > 0) fail(index, `calls ${[...open.keys()].join(', ')} never ended`);
        finishSeen = true;
        break;
      default:
        break;
    }
  });
}
