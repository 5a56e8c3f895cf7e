import type { AgentEvent, RunEventRecord, RunRecord, TerminationReason } from '@lunation/contract';
import type { ChatUIMessage } from './ui-messages.js';

/** A chunk of the AI SDK UI message stream protocol (v1), as JSON. */
export type UIMessageChunk = { type: string } & Record<string, unknown>;

/** The header that marks a response as a UI message stream. */
export const UI_MESSAGE_STREAM_HEADERS = { 'x-vercel-ai-ui-message-stream': 'v1' } as const;

/** Options of {@link toUIMessageChunks}. */
export interface UIMessageChunksOptions {
  /**
   * Events of the run's earlier invocations (before an approval, a decision or a restart), replayed first as
   * part of the same message: how a resumed stream shows the whole assistant message, tool starts included.
   */
  earlier?: Iterable<RunEventRecord>;
  /**
   * The message as stored before the events (from `toChatUIMessages`), replayed first: for a run whose earlier
   * events are no longer logged (kept a few minutes, or logged by a process that died).
   */
  stored?: ChatUIMessage;
  /**
   * Whether a tool's parts are `dynamic-tool` (a tool the page cannot know in advance) rather than the AI SDK's
   * static `tool-<name>` parts. @default {@link isDynamicToolName}: MCP tools' `<server>__<tool>` names
   */
  dynamicTool?: (toolName: string) => boolean;
}

/** The default of `dynamicTool`: MCP tools (named `<server>__<tool>`, found at run time) are dynamic. */
export function isDynamicToolName(toolName: string): boolean {
  return toolName.includes('__');
}

/**
 * Turns a run's events into UI message stream chunks: `start` (the message id is the run id, so a resumed run
 * continues the same assistant message), steps, text and reasoning parts, tool input and output, approval
 * requests for `approve` tickets (the approval id is the ticket id), and `finish` after `run-end`. With `earlier`, those events come first in the same message, without their `finish`.
 */
export async function* toUIMessageChunks(
  records: AsyncIterable<RunEventRecord>,
  options: UIMessageChunksOptions = {},
): AsyncIterable<UIMessageChunk> {
  const message = new MessageChunker(options.dynamicTool ?? isDynamicToolName);
  if (options.stored) yield* message.stored(options.stored);
  for (const { event } of options.earlier ?? []) yield* message.earlier(event);
  for await (const { event } of records) {
    yield* message.chunksOf(event);
    if (event.type === 'run-end') return;
  }
}

/** A finished run's stored message (from `toChatUIMessages`) as the chunks of a whole, finished stream. */
export function* finishedMessageChunks(message: ChatUIMessage, run: RunRecord): Iterable<UIMessageChunk> {
  yield* new MessageChunker(() => false).stored(message);
  const { threadId, runId } = run.identity;
  const termination = run.termination ?? { type: 'natural-end' as const };
  if (termination.type === 'error') yield { type: 'error', errorText: termination.error.message };
  yield {
    type: 'finish',
    finishReason: finishReason(termination),
    messageMetadata: { threadId, runId, status: run.status, termination },
  };
}

/** One assistant message's chunks across a run's invocations. */
class MessageChunker {
  private started = false;
  private text: string | undefined;
  private reasoning: string | undefined;
  /** Tool names by call, for the parts' `dynamic` flag. */
  private readonly dynamicCalls = new Map<string, boolean>();

  constructor(private readonly dynamicTool: (toolName: string) => boolean) {}

  /** A stored message's parts, as the chunks that build it. */
  *stored(message: ChatUIMessage): Iterable<UIMessageChunk> {
    this.started = true;
    yield { type: 'start', messageId: message.id, messageMetadata: message.metadata };
    let steps = 0;
    for (const [index, part] of message.parts.entries()) {
      const id = `${message.id}:stored:${index}`;
      if (part.type === 'step-start') {
        if (steps++ > 0) yield { type: 'finish-step' };
        yield { type: 'start-step' };
      } else if (part.type === 'text' || part.type === 'reasoning') {
        yield { type: `${part.type}-start`, id };
        yield { type: `${part.type}-delta`, id, delta: part.text };
        yield { type: `${part.type}-end`, id };
      } else if (typeof part.toolCallId === 'string') {
        const toolCallId = part.toolCallId;
        const toolName = typeof part.toolName === 'string' ? part.toolName : part.type.slice('tool-'.length);
        const dynamic = part.type === 'dynamic-tool' ? { dynamic: true } : {};
        this.dynamicCalls.set(toolCallId, part.type === 'dynamic-tool');
        yield { type: 'tool-input-available', toolCallId, toolName, input: part.input, ...dynamic };
        const approval = part.approval as { id: string } | undefined;
        if (approval) yield { type: 'tool-approval-request', approvalId: approval.id, toolCallId };
        if (part.state === 'output-available')
          yield { type: 'tool-output-available', toolCallId, output: part.output, ...dynamic };
        else if (part.state === 'output-error')
          yield { type: 'tool-output-error', toolCallId, errorText: part.errorText, ...dynamic };
        else if (part.state === 'output-denied') yield { type: 'tool-output-denied', toolCallId };
      }
    }
    if (steps > 0) yield { type: 'finish-step' };
  }

  /** An event of an earlier invocation: the same chunks, except that its `run-end` only closes the open parts. */
  *earlier(event: AgentEvent): Iterable<UIMessageChunk> {
    yield* event.type === 'run-end' ? this.close() : this.chunksOf(event);
  }

  *close(): Iterable<UIMessageChunk> {
    if (this.reasoning !== undefined) yield { type: 'reasoning-end', id: this.reasoning };
    if (this.text !== undefined) yield { type: 'text-end', id: this.text };
    this.reasoning = undefined;
    this.text = undefined;
  }

  *chunksOf(event: AgentEvent): Iterable<UIMessageChunk> {
    const { runId, threadId } = event.identity;
    switch (event.type) {
      case 'run-start':
        // A later invocation continues the message: its parts were closed when the earlier one ended or died.
        yield* this.close();
        if (this.started) return;
        this.started = true;
        yield { type: 'start', messageId: runId, messageMetadata: { threadId, runId } };
        return;
      case 'step-start':
        yield { type: 'start-step' };
        return;
      case 'text-delta':
        if (this.text === undefined) {
          this.text = `${runId}:${event.step}:text:${event.seq}`;
          yield { type: 'text-start', id: this.text };
        }
        yield { type: 'text-delta', id: this.text, delta: event.delta };
        return;
      case 'reasoning-delta':
        if (this.reasoning === undefined) {
          this.reasoning = `${runId}:${event.step}:reasoning:${event.seq}`;
          yield { type: 'reasoning-start', id: this.reasoning };
        }
        yield { type: 'reasoning-delta', id: this.reasoning, delta: event.delta };
        return;
      case 'tool-call-start':
        yield* this.close();
        yield {
          type: 'tool-input-start',
          toolCallId: event.toolCallId,
          toolName: event.toolName,
          ...this.dynamic(event.toolCallId, event.toolName),
        };
        return;
      case 'tool-call-delta':
        yield {
          type: 'tool-input-delta',
          toolCallId: event.toolCallId,
          inputTextDelta: event.argumentsDelta,
        };
        return;
      case 'tool-call-end':
        yield {
          type: 'tool-input-available',
          toolCallId: event.toolCallId,
          toolName: event.toolName,
          input: parseArguments(event.arguments),
          ...this.dynamic(event.toolCallId, event.toolName),
        };
        return;
      case 'tool-result':
        if (event.status === 'denied' || event.status === 'cancelled') {
          yield { type: 'tool-output-denied', toolCallId: event.toolCallId };
        } else if (event.result.status === 'error') {
          yield {
            type: 'tool-output-error',
            toolCallId: event.toolCallId,
            errorText: event.result.message ?? 'The tool failed',
            ...this.dynamic(event.toolCallId, event.toolName),
          };
        } else {
          yield {
            type: 'tool-output-available',
            toolCallId: event.toolCallId,
            output: event.result.data ?? event.result.message ?? null,
            ...this.dynamic(event.toolCallId, event.toolName),
          };
        }
        return;
      case 'tool-call-suspended':
        if (event.ticket.action === 'approve') {
          yield {
            type: 'tool-approval-request',
            approvalId: event.ticket.id,
            toolCallId: event.ticket.toolCallId,
          };
        }
        return;
      case 'step-end':
        yield* this.close();
        yield { type: 'finish-step' };
        return;
      case 'run-end':
        yield* this.close();
        if (event.termination.type === 'error')
          yield { type: 'error', errorText: event.termination.error.message };
        yield {
          type: 'finish',
          finishReason: finishReason(event.termination),
          messageMetadata: { threadId, runId, status: event.status, termination: event.termination },
        };
        return;
      default:
        return;
    }
  }

  /** `dynamic: true` for a dynamic tool's chunks; nothing for a static tool's. */
  private dynamic(toolCallId: string, toolName: string): { dynamic?: true } {
    let dynamic = this.dynamicCalls.get(toolCallId);
    if (dynamic === undefined) {
      dynamic = this.dynamicTool(toolName);
      this.dynamicCalls.set(toolCallId, dynamic);
    }
    return dynamic ? { dynamic: true } : {};
  }
}

function finishReason(termination: TerminationReason): string {
  switch (termination.type) {
    case 'natural-end':
      return 'stop';
    case 'suspended':
    case 'awaiting-tasks':
      return 'tool-calls';
    case 'error':
      return 'error';
    default:
      return 'other';
  }
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
