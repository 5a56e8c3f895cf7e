import {
  type AssistantMessage,
  addUsage,
  emptyUsage,
  type IdSource,
  type ModelRequest,
  type ModelStreamPart,
  type ProviderMetadata,
  type ReasoningPart,
  type RefusalPart,
  type StopReason,
  type TextPart,
  type ToolCallPart,
  type Usage,
} from '@lunation/contract';
import type { ModelResponse } from '../plugin.js';
import type { RunScope } from './run-scope.js';

/** The stream part of one type. */
type StreamPart<Type extends ModelStreamPart['type']> = Extract<ModelStreamPart, { type: Type }>;

/** The model's answer, plus the calls that may not run because the provider gave them no usable id. */
export interface Inference {
  response: ModelResponse;
  /** Problems by (replacement) tool call id. */
  rejectedCalls: Map<string, string> | undefined;
}

/**
 * One model call: streams the answer into an assistant message (parts in stream order; each signed,
 * redacted or annotated block its own part), emitting deltas as they arrive.
 */
export async function infer(scope: RunScope, request: ModelRequest, signal: AbortSignal): Promise<Inference> {
  const answer = new Answer(scope);
  for await (const part of scope.agent.model.stream(request, { signal })) answer.add(part);
  return answer.finish();
}

/** The answer being streamed: its parts and text so far, the calls started and ended, usage and stop reason. */
class Answer {
  // Set by the constructor, so not defined before it (see `RunScope`).
  declare private readonly scope: RunScope;
  declare private readonly step: number;
  declare private readonly listening: boolean;
  /** The message's parts (made with its first part: an empty array grows by sixteen slots on its first push). */
  private content: AssistantMessage['content'] | undefined;
  private openText: TextPart | undefined;
  private openReasoning: ReasoningPart | undefined;
  private openRefusal: RefusalPart | undefined;
  private providerMetadata: ProviderMetadata | undefined;
  private text = '';
  // Calls started but not ended yet: usually one at a time, so one slot, and a map only for overlapping calls.
  private startedId: string | undefined;
  private startedName = '';
  private startedMore: Map<string, string> | undefined;
  /** The tool-call parts, which are also the response's calls. */
  private toolCalls: ToolCallPart[] | undefined;
  private usage: Usage | undefined;
  /** A usage part said the provider could not tell the call's usage. */
  private usageUnknown = false;
  private stopReason: StopReason | undefined;

  constructor(scope: RunScope) {
    this.scope = scope;
    this.step = scope.progress.step;
    this.listening = scope.listening;
  }

  add(part: ModelStreamPart): void {
    switch (part.type) {
      case 'text-delta':
        this.addText(part);
        break;
      case 'reasoning-delta':
        this.addReasoning(part);
        break;
      case 'refusal-delta':
        this.addRefusal(part);
        break;
      case 'provider-content':
        this.addPart({
          type: 'provider-content',
          provider: part.provider,
          kind: part.kind,
          value: part.value,
        });
        this.closeBlocks();
        break;
      case 'tool-call-start':
        this.startCall(part);
        break;
      case 'tool-call-delta':
        if (this.listening) {
          const { toolCallId, argumentsDelta } = part;
          this.scope.emit({ type: 'tool-call-delta', step: this.step, toolCallId, argumentsDelta });
        }
        break;
      case 'tool-call-end':
        this.endCall(part);
        break;
      case 'usage':
        // Usage the provider could not tell is not counted: its numbers are placeholders.
        if (part.unknown === true) this.usageUnknown = true;
        else this.usage = this.usage === undefined ? part.usage : addUsage(this.usage, part.usage);
        break;
      case 'finish':
        this.stopReason = part.stopReason;
        if (part.providerMetadata) this.providerMetadata = part.providerMetadata;
        break;
    }
  }

  private addText(part: StreamPart<'text-delta'>): void {
    this.text += part.delta;
    let openText = this.openText;
    if (openText) openText.text += part.delta;
    else {
      openText = { type: 'text', text: part.delta };
      this.addPart(openText);
      this.openText = openText;
    }
    this.openReasoning = undefined;
    this.openRefusal = undefined;
    if (part.providerMetadata) {
      openText.providerMetadata = part.providerMetadata;
      this.openText = undefined; // metadata closes the block
    }
    if (this.listening && part.delta) {
      this.scope.emit({ type: 'text-delta', step: this.step, delta: part.delta });
    }
  }

  private addReasoning(part: StreamPart<'reasoning-delta'>): void {
    let openReasoning = this.openReasoning;
    if (!openReasoning) {
      openReasoning = { type: 'reasoning', text: '' };
      this.addPart(openReasoning);
      this.openReasoning = openReasoning;
    }
    this.openText = undefined;
    this.openRefusal = undefined;
    openReasoning.text += part.delta;
    if (part.redacted) openReasoning.redacted = true;
    if (part.providerMetadata) openReasoning.providerMetadata = part.providerMetadata;
    if (part.signature !== undefined || part.redacted || part.providerMetadata) {
      if (part.signature !== undefined) openReasoning.signature = part.signature;
      this.openReasoning = undefined; // a signature, redaction or metadata closes the block
    }
    if (part.delta && this.listening) {
      this.scope.emit({ type: 'reasoning-delta', step: this.step, delta: part.delta });
    }
  }

  private addRefusal(part: StreamPart<'refusal-delta'>): void {
    if (this.openRefusal) this.openRefusal.text += part.delta;
    else {
      this.openRefusal = { type: 'refusal', text: part.delta };
      this.addPart(this.openRefusal);
    }
    this.openText = undefined;
    this.openReasoning = undefined;
  }

  private startCall(part: StreamPart<'tool-call-start'>): void {
    if (this.startedId === undefined && this.startedMore === undefined) {
      this.startedId = part.toolCallId;
      this.startedName = part.toolName;
    } else {
      this.startedMore ??= new Map();
      this.startedMore.set(part.toolCallId, part.toolName);
    }
    if (this.listening) {
      const { toolCallId, toolName } = part;
      this.scope.emit({ type: 'tool-call-start', step: this.step, toolCallId, toolName });
    }
  }

  private endCall(part: StreamPart<'tool-call-end'>): void {
    if (this.startedId === part.toolCallId) this.startedId = undefined;
    else this.startedMore?.delete(part.toolCallId);
    // Built with its `callId` (the runtime's id, see identifyCalls): a property added later costs every call an
    // extra properties array, kept as long as the thread is.
    const call: ToolCallPart = {
      type: 'tool-call',
      toolCallId: part.toolCallId,
      toolName: part.toolName,
      arguments: part.arguments,
      callId: `lc_${this.scope.ids.id()}`,
    };
    if (part.providerMetadata) call.providerMetadata = part.providerMetadata;
    this.addCall(call);
    this.closeBlocks();
    if (this.listening) {
      const { toolCallId, toolName, arguments: args } = call;
      this.scope.emit({ type: 'tool-call-end', step: this.step, toolCallId, toolName, arguments: args });
    }
  }

  /** The stream ended: the assistant message and the response. */
  finish(): Inference {
    const { scope } = this;
    // A call that started but never ended (a stream cut short) has no arguments to run with: it is kept, with
    // empty arguments, and never runs; the model is told why.
    const cutShort: ToolCallPart[] = [];
    if (this.startedId !== undefined) cutShort.push(this.cutShort(this.startedId, this.startedName));
    if (this.startedMore) for (const [id, name] of this.startedMore) cutShort.push(this.cutShort(id, name));
    const toolCalls = this.toolCalls ?? [];
    let rejectedCalls = toolCalls.length > 0 ? identifyCalls(toolCalls, scope.ids) : undefined;
    for (const call of cutShort) {
      rejectedCalls ??= new Map();
      if (!rejectedCalls.has(call.toolCallId)) rejectedCalls.set(call.toolCallId, cutShortProblem);
    }
    const usage = this.usage ?? emptyUsage();
    scope.addUsage(usage);
    if (this.usageUnknown) scope.stepUsageUnknown = true;
    const message: AssistantMessage = {
      id: scope.ids.id(),
      role: 'assistant',
      content: this.content ?? [],
      metadata: { runId: scope.identity.runId, agentId: scope.agent.id, step: this.step },
    };
    if (this.providerMetadata) message.providerMetadata = this.providerMetadata;
    const response: ModelResponse = {
      message,
      text: this.text,
      toolCalls,
      stopReason: this.stopReason,
      usage,
    };
    if (this.usageUnknown) (response as { usageUnknown?: boolean }).usageUnknown = true;
    return { response, rejectedCalls };
  }

  private addPart(part: AssistantMessage['content'][number]): void {
    if (this.content === undefined) this.content = [part];
    else this.content.push(part);
  }

  private addCall(call: ToolCallPart): void {
    if (this.toolCalls === undefined) this.toolCalls = [call];
    else this.toolCalls.push(call);
    this.addPart(call);
  }

  /** A call that started but never ended: kept with empty arguments. */
  private cutShort(toolCallId: string, toolName: string): ToolCallPart {
    const call: ToolCallPart = {
      type: 'tool-call',
      toolCallId,
      toolName,
      arguments: '',
      callId: `lc_${this.scope.ids.id()}`,
    };
    this.addCall(call);
    return call;
  }

  private closeBlocks(): void {
    this.openText = undefined;
    this.openReasoning = undefined;
    this.openRefusal = undefined;
  }
}

const cutShortProblem =
  "The model's response was cut off before this tool call's arguments were complete, so it was not run. Call the tool again if it is still needed.";

/**
 * Every call has the runtime's own id (`callId`, unique in the thread: the ledger, idempotency keys and
 * recovery use it; given as the call is built), so a provider may reuse its ids in later answers of a run. Within one answer the
 * provider's ids pair calls with results: a call whose id is empty or repeats another call of the same answer
 * gets a fresh provider-side id too (in the message, so call and result stay paired) and will not run; the
 * model is told why.
 */
function identifyCalls(toolCalls: ToolCallPart[], ids: IdSource): Map<string, string> | undefined {
  let rejected: Map<string, string> | undefined;
  let seen: Set<string> | undefined;
  for (const call of toolCalls) {
    const id = call.toolCallId;
    const problem =
      typeof id !== 'string' || id === ''
        ? 'The provider gave this tool call no id, so it was not run. Call the tool again if it is still needed.'
        : seen?.has(id)
          ? `The provider gave this tool call the same id as another call of this answer ("${id}"), so it was not run. Call the tool again if it is still needed.`
          : undefined;
    if (problem === undefined) {
      if (toolCalls.length > 1) {
        seen ??= new Set();
        seen.add(id);
      }
      continue;
    }
    const replacement = `call_${ids.id().replace(/-/g, '')}`;
    call.toolCallId = replacement;
    rejected ??= new Map();
    rejected.set(replacement, problem);
  }
  return rejected;
}
