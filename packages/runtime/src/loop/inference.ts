import {
  type AssistantMessage,
  addUsage,
  emptyUsage,
  type ModelRequest,
  type ProviderMetadata,
  type ReasoningPart,
  type RefusalPart,
  type StopReason,
  type TextPart,
  type ToolCallPart,
  type Usage,
} from '@lunation/contract';
import { createId } from '../id.js';
import type { ModelResponse } from '../plugin.js';
import type { RunScope } from './run-scope.js';

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
  const step = scope.progress.step;
  const content: AssistantMessage['content'] = [];
  let openText: TextPart | undefined;
  let openReasoning: ReasoningPart | undefined;
  let openRefusal: RefusalPart | undefined;
  let providerMetadata: ProviderMetadata | undefined;
  let text = '';
  // Calls started but not ended yet: usually one at a time, so one slot, and a map only for overlapping calls.
  let startedId: string | undefined;
  let startedName = '';
  let startedMore: Map<string, string> | undefined;
  /** The tool-call parts, which are also the response's calls. */
  const toolCalls: ToolCallPart[] = [];
  let usage: Usage | undefined;
  let stopReason: StopReason | undefined;
  const { listening } = scope;
  for await (const part of scope.agent.model.stream(request, { signal })) {
    switch (part.type) {
      case 'text-delta':
        text += part.delta;
        if (openText) openText.text += part.delta;
        else {
          openText = { type: 'text', text: part.delta };
          content.push(openText);
        }
        openReasoning = undefined;
        openRefusal = undefined;
        if (part.providerMetadata) {
          openText.providerMetadata = part.providerMetadata;
          openText = undefined; // metadata closes the block
        }
        if (listening && part.delta) scope.emit({ type: 'text-delta', step, delta: part.delta });
        break;
      case 'reasoning-delta':
        if (!openReasoning) {
          openReasoning = { type: 'reasoning', text: '' };
          content.push(openReasoning);
        }
        openText = undefined;
        openRefusal = undefined;
        openReasoning.text += part.delta;
        if (part.redacted) openReasoning.redacted = true;
        if (part.providerMetadata) openReasoning.providerMetadata = part.providerMetadata;
        if (part.signature !== undefined || part.redacted || part.providerMetadata) {
          if (part.signature !== undefined) openReasoning.signature = part.signature;
          openReasoning = undefined; // a signature, redaction or metadata closes the block
        }
        if (part.delta && listening) scope.emit({ type: 'reasoning-delta', step, delta: part.delta });
        break;
      case 'refusal-delta':
        if (openRefusal) openRefusal.text += part.delta;
        else {
          openRefusal = { type: 'refusal', text: part.delta };
          content.push(openRefusal);
        }
        openText = undefined;
        openReasoning = undefined;
        break;
      case 'provider-content':
        content.push({
          type: 'provider-content',
          provider: part.provider,
          kind: part.kind,
          value: part.value,
        });
        openText = undefined;
        openReasoning = undefined;
        openRefusal = undefined;
        break;
      case 'tool-call-start':
        if (startedId === undefined && startedMore === undefined) {
          startedId = part.toolCallId;
          startedName = part.toolName;
        } else {
          startedMore ??= new Map();
          startedMore.set(part.toolCallId, part.toolName);
        }
        if (listening) {
          scope.emit({ type: 'tool-call-start', step, toolCallId: part.toolCallId, toolName: part.toolName });
        }
        break;
      case 'tool-call-delta':
        if (listening) {
          scope.emit({
            type: 'tool-call-delta',
            step,
            toolCallId: part.toolCallId,
            argumentsDelta: part.argumentsDelta,
          });
        }
        break;
      case 'tool-call-end': {
        if (startedId === part.toolCallId) startedId = undefined;
        else startedMore?.delete(part.toolCallId);
        const call: ToolCallPart = {
          type: 'tool-call',
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          arguments: part.arguments,
        };
        if (part.providerMetadata) call.providerMetadata = part.providerMetadata;
        toolCalls.push(call);
        content.push(call);
        openText = undefined;
        openReasoning = undefined;
        openRefusal = undefined;
        if (listening) {
          scope.emit({
            type: 'tool-call-end',
            step,
            toolCallId: call.toolCallId,
            toolName: call.toolName,
            arguments: call.arguments,
          });
        }
        break;
      }
      case 'usage':
        usage = usage === undefined ? part.usage : addUsage(usage, part.usage);
        break;
      case 'finish':
        stopReason = part.stopReason;
        if (part.providerMetadata) providerMetadata = part.providerMetadata;
        break;
    }
  }
  // A call that started but never ended (a stream cut short) has no arguments to run with: it is kept, with
  // empty arguments, so the model is told it did not run.
  if (startedId !== undefined) cutShort(toolCalls, content, startedId, startedName);
  if (startedMore) for (const [id, name] of startedMore) cutShort(toolCalls, content, id, name);
  const rejectedCalls = toolCalls.length > 0 ? checkCallIds(toolCalls, scope.callIds) : undefined;
  if (usage === undefined) usage = emptyUsage();
  scope.progress.usage = addUsage(scope.progress.usage, usage);
  const message: AssistantMessage = {
    id: createId(),
    role: 'assistant',
    content,
    metadata: { runId: scope.identity.runId, agentId: scope.agent.id, step },
  };
  if (providerMetadata) message.providerMetadata = providerMetadata;
  return { response: { message, text, toolCalls, stopReason, usage }, rejectedCalls };
}

/** A call that started but never ended (a stream cut short): kept with empty arguments. */
function cutShort(
  toolCalls: ToolCallPart[],
  content: AssistantMessage['content'],
  toolCallId: string,
  toolName: string,
): void {
  const call: ToolCallPart = { type: 'tool-call', toolCallId, toolName, arguments: '' };
  toolCalls.push(call);
  content.push(call);
}

/**
 * Every call needs an id of its own: the ledger, tickets and results are keyed by it. A call whose id is
 * empty or repeats an earlier one of the run gets a fresh id (in the message too, so call and result stay paired) and
 * will not run; the model is told why.
 */
function checkCallIds(toolCalls: ToolCallPart[], seen: Set<string>): Map<string, string> | undefined {
  let rejected: Map<string, string> | undefined;
  for (const call of toolCalls) {
    const id = call.toolCallId;
    const problem =
      typeof id !== 'string' || id === ''
        ? 'The provider gave this tool call no id, so it was not run. Call the tool again if it is still needed.'
        : seen.has(id)
          ? `The provider gave this tool call the same id as an earlier call of this run ("${id}"), so it was not run. Call the tool again if it is still needed.`
          : undefined;
    if (problem === undefined) {
      seen.add(id);
      continue;
    }
    const replacement = `call_${createId().replace(/-/g, '')}`;
    call.toolCallId = replacement;
    rejected ??= new Map();
    rejected.set(replacement, problem);
  }
  return rejected;
}
