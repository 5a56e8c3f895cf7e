import type {
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
  SharedV4ProviderMetadata,
} from '@ai-sdk/provider';
import type { JsonObject, ModelStreamPart, ProviderMetadata, StopReason, Usage } from '@lunation/contract';
import { type ProviderLabel, streamInterruptedError } from '@lunation/contract/provider-utils';
import { streamErrorPart } from './map-error.js';

interface OpenCall {
  toolName: string;
  arguments: string;
  providerExecuted: boolean;
}

/**
 * Turns V4 stream parts into contract parts. Text and reasoning metadata (from deltas and the block's end) is
 * gathered and put on one empty delta at the block's end, which closes the block; provider-executed tool calls
 * and results, custom parts and sources become `provider-content`. The stream is complete only with `finish`.
 */
export async function* parseStream(
  parts: AsyncIterable<LanguageModelV4StreamPart>,
  label: ProviderLabel,
  providerId: string,
  keepCustomPart: (kind: string) => boolean,
): AsyncGenerator<ModelStreamPart> {
  const calls = new Map<string, OpenCall>();
  const blockMetadata = new Map<string, ProviderMetadata>();
  // A call's end waits for the next part: some models flush unfinished calls right before an `interrupted` finish.
  let heldEnds: ModelStreamPart[] = [];
  for await (const part of parts) {
    if (heldEnds.length > 0 && part.type !== 'finish' && part.type !== 'error') {
      yield* heldEnds;
      heldEnds = [];
    }
    switch (part.type) {
      case 'text-start':
      case 'reasoning-start':
        gather(blockMetadata, `${part.type.split('-')[0]}:${part.id}`, part.providerMetadata);
        break;
      case 'text-delta':
        gather(blockMetadata, `text:${part.id}`, part.providerMetadata);
        if (part.delta) yield { type: 'text-delta', delta: part.delta };
        break;
      case 'reasoning-delta':
        gather(blockMetadata, `reasoning:${part.id}`, part.providerMetadata);
        if (part.delta) yield { type: 'reasoning-delta', delta: part.delta };
        break;
      case 'text-end':
      case 'reasoning-end': {
        const kind = part.type === 'text-end' ? 'text' : 'reasoning';
        const key = `${kind}:${part.id}`;
        gather(blockMetadata, key, part.providerMetadata);
        const metadata = blockMetadata.get(key);
        blockMetadata.delete(key);
        if (metadata !== undefined) yield { type: `${kind}-delta`, delta: '', providerMetadata: metadata };
        break;
      }
      case 'tool-input-start': {
        const providerExecuted = part.providerExecuted === true;
        calls.set(part.id, { toolName: part.toolName, arguments: '', providerExecuted });
        if (!providerExecuted)
          yield { type: 'tool-call-start', toolCallId: part.id, toolName: part.toolName };
        break;
      }
      case 'tool-input-delta': {
        const call = calls.get(part.id);
        if (call === undefined || !part.delta) break;
        call.arguments += part.delta;
        if (!call.providerExecuted)
          yield { type: 'tool-call-delta', toolCallId: part.id, argumentsDelta: part.delta };
        break;
      }
      case 'tool-call': {
        const call = calls.get(part.toolCallId);
        calls.delete(part.toolCallId);
        if (part.providerExecuted === true || call?.providerExecuted) {
          yield content(providerId, 'tool-call', {
            toolCallId: part.toolCallId,
            toolName: part.toolName,
            input: part.input,
            providerExecuted: true,
            ...(part.dynamic === undefined ? {} : { dynamic: part.dynamic }),
            ...metadataField(part.providerMetadata),
          });
          break;
        }
        for (const end of endCall(part.toolCallId, part.toolName, part.input, call, part.providerMetadata)) {
          if (end.type === 'tool-call-end') heldEnds.push(end);
          else yield end;
        }
        break;
      }
      case 'tool-result':
        if (part.preliminary === true) break;
        yield content(providerId, 'tool-result', {
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          result: part.result as JsonObject[string],
          ...(part.isError === undefined ? {} : { isError: part.isError }),
          ...(part.dynamic === undefined ? {} : { dynamic: part.dynamic }),
          ...metadataField(part.providerMetadata),
        });
        break;
      case 'custom':
        if (keepCustomPart(part.kind))
          yield content(providerId, 'custom', { kind: part.kind, ...metadataField(part.providerMetadata) });
        break;
      case 'source':
        yield content(providerId, 'source', toJson(part));
        break;
      case 'error':
        throw streamErrorPart(part.error, label);
      case 'finish': {
        if (part.finishReason.unified === 'interrupted') {
          throw streamInterruptedError(label, 'the AI SDK model reported the stream as interrupted');
        }
        yield* heldEnds;
        for (const [id, call] of calls)
          if (!call.providerExecuted) yield* endCall(id, call.toolName, '', call, undefined);
        yield { type: 'usage', usage: toUsage(part.usage) };
        const metadata = part.providerMetadata as ProviderMetadata | undefined;
        yield {
          type: 'finish',
          stopReason: toStopReason(part.finishReason.unified, part.finishReason.raw),
          ...(part.finishReason.raw === undefined ? {} : { rawStopReason: part.finishReason.raw }),
          ...(metadata !== undefined && Object.keys(metadata).length > 0
            ? { providerMetadata: toJson(metadata) as ProviderMetadata }
            : {}),
        };
        return;
      }
      default:
        // stream-start (warnings), response-metadata, raw, ping, file, reasoning-file, tool-approval-request.
        break;
    }
  }
  throw streamInterruptedError(label, 'the AI SDK stream ended without a finish part');
}

/**
 * Ends a client call. The end's `arguments` must equal the streamed pieces: a call streamed without pieces gets
 * its whole input as one piece.
 */
function* endCall(
  toolCallId: string,
  toolName: string,
  input: string,
  call: OpenCall | undefined,
  providerMetadata: SharedV4ProviderMetadata | undefined,
): Generator<ModelStreamPart> {
  if (call === undefined) yield { type: 'tool-call-start', toolCallId, toolName };
  let args = call?.arguments ?? '';
  if (args === '') {
    args = input === '' ? '{}' : input;
    yield { type: 'tool-call-delta', toolCallId, argumentsDelta: args };
  }
  yield {
    type: 'tool-call-end',
    toolCallId,
    toolName,
    arguments: args,
    ...(providerMetadata === undefined
      ? {}
      : { providerMetadata: toJson(providerMetadata) as ProviderMetadata }),
  };
}

function content(provider: string, kind: string, value: JsonObject): ModelStreamPart {
  return { type: 'provider-content', provider, kind, value };
}

function metadataField(metadata: SharedV4ProviderMetadata | undefined): { providerMetadata?: JsonObject } {
  return metadata === undefined ? {} : { providerMetadata: toJson(metadata) };
}

/** Merges a part's provider metadata into its block's (per provider key, later values win). */
function gather(
  blocks: Map<string, ProviderMetadata>,
  key: string,
  metadata: SharedV4ProviderMetadata | undefined,
): void {
  if (metadata === undefined) return;
  const merged = blocks.get(key) ?? {};
  for (const [provider, values] of Object.entries(toJson(metadata) as ProviderMetadata))
    merged[provider] = { ...merged[provider], ...values };
  blocks.set(key, merged);
}

/** A JSON copy (drops `undefined`, turns dates into strings). */
function toJson(value: unknown): JsonObject {
  return JSON.parse(JSON.stringify(value)) as JsonObject;
}

/** V4 `inputTokens.total` counts cache reads and writes, as the contract's `inputTokens` does. */
export function toUsage(usage: LanguageModelV4Usage): Usage {
  const cacheReadTokens = usage.inputTokens.cacheRead ?? 0;
  const cacheWriteTokens = usage.inputTokens.cacheWrite ?? 0;
  const inputTokens =
    usage.inputTokens.total ?? (usage.inputTokens.noCache ?? 0) + cacheReadTokens + cacheWriteTokens;
  const reasoning = usage.outputTokens.reasoning ?? 0;
  const outputTokens = usage.outputTokens.total ?? (usage.outputTokens.text ?? 0) + reasoning;
  return {
    inputTokens,
    outputTokens,
    cacheReadTokens,
    cacheWriteTokens,
    reasoningTokens: Math.min(reasoning, outputTokens),
  };
}

/** The contract's stop reason; `stop_sequence` and `refusal` are told apart by the provider's raw reason. */
export function toStopReason(unified: string, raw: string | undefined): StopReason {
  switch (unified) {
    case 'length':
      return 'max-tokens';
    case 'tool-calls':
      return 'tool-use';
    case 'content-filter':
      return 'content-filter';
    case 'error':
      return 'error';
    default:
      return raw === 'stop_sequence' ? 'stop-sequence' : 'end-turn';
  }
}
