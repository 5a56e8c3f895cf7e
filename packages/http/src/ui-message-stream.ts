import type { AgentEvent, RunEventRecord, TerminationReason } from '@lunation/contract';

/** A chunk of the AI SDK UI message stream protocol (v1), as JSON. */
export type UIMessageChunk = { type: string } & Record<string, unknown>;

/** The header that marks a response as a UI message stream. */
export const UI_MESSAGE_STREAM_HEADERS = { 'x-vercel-ai-ui-message-stream': 'v1' } as const;

/**
 * Turns a run's events into UI message stream chunks: `start` (the message id is the run id, so a resumed run
 * continues the same assistant message), steps, text and reasoning parts, tool input and output, approval
 * requests for `approve` tickets (the approval id is the ticket id), and `finish` after `run-end`.
 */
export async function* toUIMessageChunks(
  records: AsyncIterable<RunEventRecord>,
): AsyncIterable<UIMessageChunk> {
  const open = new OpenParts();
  for await (const { event } of records) {
    yield* chunksOf(event, open);
    if (event.type === 'run-end') return;
  }
}

/** The text and reasoning parts open in the current step. */
class OpenParts {
  text: string | undefined;
  reasoning: string | undefined;

  *close(): Iterable<UIMessageChunk> {
    if (this.reasoning !== undefined) yield { type: 'reasoning-end', id: this.reasoning };
    if (this.text !== undefined) yield { type: 'text-end', id: this.text };
    this.reasoning = undefined;
    this.text = undefined;
  }
}

function* chunksOf(event: AgentEvent, open: OpenParts): Iterable<UIMessageChunk> {
  const { runId, threadId } = event.identity;
  switch (event.type) {
    case 'run-start':
      yield { type: 'start', messageId: runId, messageMetadata: { threadId, runId } };
      return;
    case 'step-start':
      yield { type: 'start-step' };
      return;
    case 'text-delta':
      if (open.text === undefined) {
        open.text = `${runId}:${event.step}:text:${event.seq}`;
        yield { type: 'text-start', id: open.text };
      }
      yield { type: 'text-delta', id: open.text, delta: event.delta };
      return;
    case 'reasoning-delta':
      if (open.reasoning === undefined) {
        open.reasoning = `${runId}:${event.step}:reasoning:${event.seq}`;
        yield { type: 'reasoning-start', id: open.reasoning };
      }
      yield { type: 'reasoning-delta', id: open.reasoning, delta: event.delta };
      return;
    case 'tool-call-start':
      yield* open.close();
      yield {
        type: 'tool-input-start',
        toolCallId: event.toolCallId,
        toolName: event.toolName,
        dynamic: true,
      };
      return;
    case 'tool-call-delta':
      yield { type: 'tool-input-delta', toolCallId: event.toolCallId, inputTextDelta: event.argumentsDelta };
      return;
    case 'tool-call-end':
      yield {
        type: 'tool-input-available',
        toolCallId: event.toolCallId,
        toolName: event.toolName,
        input: parseArguments(event.arguments),
        dynamic: true,
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
          dynamic: true,
        };
      } else {
        yield {
          type: 'tool-output-available',
          toolCallId: event.toolCallId,
          output: event.result.data ?? event.result.message ?? null,
          dynamic: true,
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
      yield* open.close();
      yield { type: 'finish-step' };
      return;
    case 'run-end':
      yield* open.close();
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
