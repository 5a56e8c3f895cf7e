import {
  type Clock,
  LunationError,
  type ModelCallOptions,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamPart,
  type StopReason,
  systemClock,
  type Usage,
} from '@lunation/contract';

/** One scripted model answer. */
export interface ScriptedResponse {
  text?: string;
  reasoning?: string;
  reasoningSignature?: string;
  toolCalls?: Array<{ toolName: string; arguments: unknown; toolCallId?: string }>;
  usage?: Partial<Usage>;
  /** @default 'tool-use' with tool calls, else 'end-turn' */
  stopReason?: StopReason;
  /** Throw this instead of answering (before any part). */
  error?: Error;
  /** Wait this long (abortably) before answering. */
  delayMs?: number;
  /** Stream exactly these parts instead (text, reasoning and tool calls above are then ignored). */
  parts?: ModelStreamPart[];
}

/** A list of responses (one per call) or a function of the request and the call's index. */
export type Script =
  | ScriptedResponse[]
  | ((request: ModelRequest, index: number) => ScriptedResponse | Promise<ScriptedResponse>);

/** Options of {@link ScriptedModel}. */
export interface ScriptedModelOptions {
  /** @default 'scripted' */
  modelId?: string;
  /** Stream text and reasoning in pieces of this many characters. @default the whole text at once */
  textChunkSize?: number;
  /** Stream tool-call arguments in pieces of this many characters. @default the whole arguments at once */
  argumentsChunkSize?: number;
  /** Pause between streamed parts (abortable). @default 0 */
  partDelayMs?: number;
  /** Where `delayMs` and `partDelayMs` are waited. @default systemClock */
  clock?: Clock;
}

/** A deterministic ModelProvider for tests: answers from a script and records every request. */
export class ScriptedModel implements ModelProvider {
  readonly specificationVersion = 'v1' as const;
  readonly provider = 'scripted';
  readonly modelId: string;
  /** Every request received, in order. */
  readonly requests: ModelRequest[] = [];
  private calls = 0;

  constructor(
    private readonly script: Script,
    private readonly options: ScriptedModelOptions = {},
  ) {
    this.modelId = options.modelId ?? 'scripted';
  }

  /** How many calls were made. */
  get callCount(): number {
    return this.calls;
  }

  /** Waits `ms` on the model's clock; an abort rejects with `cancelled`. */
  private sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return (this.options.clock ?? systemClock).sleep(ms, signal).catch((reason: unknown) => {
      throw new LunationError('cancelled', 'The model call was aborted', { cause: reason });
    });
  }

  async *stream(request: ModelRequest, options: ModelCallOptions = {}): AsyncGenerator<ModelStreamPart> {
    const index = this.calls++;
    this.requests.push(request);
    const { signal } = options;
    const response = Array.isArray(this.script) ? this.script[index] : await this.script(request, index);
    if (!response) {
      throw new LunationError(
        'internal',
        `ScriptedModel has no response #${index + 1} (script has ${Array.isArray(this.script) ? this.script.length : '?'})`,
      );
    }
    if (response.delayMs) await this.sleep(response.delayMs, signal);
    checkAbort(signal);
    if (response.error) throw response.error;
    if (response.parts) {
      for (const part of response.parts) {
        checkAbort(signal);
        yield part;
      }
      return;
    }
    const partDelay = this.options.partDelayMs ?? 0;
    const pause = async () => {
      if (partDelay > 0) await this.sleep(partDelay, signal);
      checkAbort(signal);
    };
    if (response.reasoning !== undefined) {
      for (const piece of chunks(response.reasoning, this.options.textChunkSize)) {
        yield { type: 'reasoning-delta', delta: piece };
        await pause();
      }
      if (response.reasoningSignature)
        yield { type: 'reasoning-delta', delta: '', signature: response.reasoningSignature };
    }
    if (response.text) {
      for (const piece of chunks(response.text, this.options.textChunkSize)) {
        yield { type: 'text-delta', delta: piece };
        await pause();
      }
    }
    const toolCalls = response.toolCalls ?? [];
    for (let callIndex = 0; callIndex < toolCalls.length; callIndex++) {
      const call = toolCalls[callIndex] as NonNullable<ScriptedResponse['toolCalls']>[number];
      const toolCallId = call.toolCallId ?? `call_${index + 1}_${callIndex + 1}`;
      const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
      yield { type: 'tool-call-start', toolCallId, toolName: call.toolName };
      if (this.options.argumentsChunkSize) {
        for (const piece of chunks(args, this.options.argumentsChunkSize)) {
          yield { type: 'tool-call-delta', toolCallId, argumentsDelta: piece };
          await pause();
        }
      }
      yield { type: 'tool-call-end', toolCallId, toolName: call.toolName, arguments: args };
    }
    yield {
      type: 'usage',
      usage: {
        inputTokens: response.usage?.inputTokens ?? 0,
        outputTokens: response.usage?.outputTokens ?? 0,
        cacheReadTokens: response.usage?.cacheReadTokens ?? 0,
        cacheWriteTokens: response.usage?.cacheWriteTokens ?? 0,
        reasoningTokens: response.usage?.reasoningTokens ?? 0,
      },
    };
    yield {
      type: 'finish',
      stopReason: response.stopReason ?? (toolCalls.length > 0 ? 'tool-use' : 'end-turn'),
    };
  }
}

/** A scripted answer with text only. */
export function reply(text: string, extra: Omit<ScriptedResponse, 'text'> = {}): ScriptedResponse {
  return { text, ...extra };
}

/** A scripted answer calling one tool. */
export function callTool(
  toolName: string,
  args: unknown,
  extra: Omit<ScriptedResponse, 'toolCalls'> = {},
): ScriptedResponse {
  return { toolCalls: [{ toolName, arguments: args }], ...extra };
}

function chunks(text: string, size: number | undefined): string[] {
  if (!size || size <= 0 || text.length <= size) return [text];
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size) pieces.push(text.slice(start, start + size));
  return pieces;
}

function checkAbort(signal: AbortSignal | undefined): void {
  if (signal?.aborted)
    throw new LunationError('cancelled', 'The model call was aborted', { cause: signal.reason });
}
