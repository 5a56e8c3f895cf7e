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
  type ToolCall,
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
  const started = new Map<string, string>();
  const toolCalls: ToolCall[] = [];
  const callParts: ToolCallPart[] = [];
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
        started.set(part.toolCallId, part.toolName);
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
        started.delete(part.toolCallId);
        const call: ToolCall = {
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          arguments: part.arguments,
        };
        const callPart: ToolCallPart = {
          type: 'tool-call',
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          arguments: part.arguments,
        };
        if (part.providerMetadata) callPart.providerMetadata = part.providerMetadata;
        toolCalls.push(call);
        callParts.push(callPart);
        content.push(callPart);
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
  for (const [toolCallId, toolName] of started) {
    const call: ToolCall = { toolCallId, toolName, arguments: '' };
    const callPart: ToolCallPart = { type: 'tool-call', ...call };
    toolCalls.push(call);
    callParts.push(callPart);
    content.push(callPart);
  }
  const rejectedCalls = checkCallIds(toolCalls, callParts, scope.callIds);
  if (usage === undefined) usage = emptyUsage();
  scope.progress.usage = addUsage(scope.progress.usage, usage);
  const message: AssistantMessage = {
    id: createId(),
    role: 'assistant',
    content,
    metadata: { runId: scope.identity.runId, agentId: scope.agent.id, step },
    ...(providerMetadata ? { providerMetadata } : {}),
  };
  return { response: { message, text, toolCalls, stopReason, usage }, rejectedCalls };
}

/**
 * Every call needs an id of its own: the ledger, tickets and results are keyed by it. A call whose id is
 * empty or repeats an earlier one of the run gets a fresh id (in the message too, so call and result stay paired) and
 * will not run; the model is told why.
 */
function checkCallIds(
  toolCalls: ToolCall[],
  callParts: ToolCallPart[],
  seen: Set<string>,
): Map<string, string> | undefined {
  let rejected: Map<string, string> | undefined;
  for (let index = 0; index < toolCalls.length; index++) {
    const call = toolCalls[index] as ToolCall;
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
    toolCalls[index] = { ...call, toolCallId: replacement };
    (callParts[index] as ToolCallPart).toolCallId = replacement;
    rejected ??= new Map();
    rejected.set(replacement, problem);
  }
  return rejected;
}
