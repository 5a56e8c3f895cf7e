import type { ResumeDecision, SuspensionTicket } from '@lunation/contract';
import { LunationError } from '@lunation/contract';
import { z } from 'zod';
import { isRunStream, type RunStream } from './front.js';
import type { ApiParts, RouteContext } from './http-api.js';
import { HttpError } from './http-error.js';
import { readBody } from './request-body.js';
import { toUIMessageChunks, UI_MESSAGE_STREAM_HEADERS, type UIMessageChunk } from './ui-message-stream.js';

/** A UI message part as the client sends it: only the fields read here are checked. */
const uiPartSchema = z.looseObject({
  type: z.string(),
  text: z.string().optional(),
  toolCallId: z.string().optional(),
  state: z.string().optional(),
  output: z.unknown().optional(),
  approval: z
    .looseObject({ id: z.string().min(1), approved: z.boolean().optional(), reason: z.string().optional() })
    .optional(),
});

/** The body of the AI SDK's `DefaultChatTransport` (extra fields from `body` are allowed and ignored). */
const chatBodySchema = z.looseObject({
  id: z.string().min(1),
  messages: z
    .array(
      z.looseObject({
        id: z.string().optional(),
        role: z.enum(['system', 'user', 'assistant']),
        parts: z.array(uiPartSchema),
      }),
    )
    .min(1),
  trigger: z.enum(['submit-message', 'regenerate-message']).optional(),
  messageId: z.string().optional(),
});

type UIPart = z.infer<typeof uiPartSchema>;

/**
 * `POST /chat`: the AI SDK UI message stream protocol. The last message is read: a user message starts a run with
 * its text; an assistant message answers open tickets (approval responses, frontend tool outputs).
 */
export async function postChat(parts: ApiParts, { request, resource }: RouteContext): Promise<Response> {
  const body = await readBody(chatBodySchema, request, parts.bodyLimits);
  if (body.trigger === 'regenerate-message') {
    throw new HttpError(
      400,
      'invalid-argument',
      'Regenerating a message is not supported: send a new message',
    );
  }
  const threadId = await chatThread(parts, body.id, resource);
  // The message answered: the one named by `messageId` (an approval's assistant message), else the last.
  const last =
    body.messages.find((message) => body.messageId && message.id === body.messageId) ?? body.messages.at(-1)!;
  const front = { threadId, resource };
  if (last.role === 'user') {
    const text = last.parts
      .filter((part) => part.type === 'text' && typeof part.text === 'string')
      .map((part) => part.text)
      .join('\n');
    if (text.trim() === '')
      throw new HttpError(400, 'invalid-argument', 'The last message has no text to send');
    return uiStream(parts, await parts.front.send(front, text));
  }
  const latest = await parts.store.getLatestRun(threadId);
  const open = latest?.status === 'waiting' ? latest.openTickets : [];
  const decisions = decisionsOf(last.parts, open);
  if (decisions.length === 0) {
    throw new HttpError(
      400,
      'unknown-ticket',
      `The last message answers no open ticket of thread "${threadId}"; open: ${open.map((ticket) => ticket.id).join(', ') || 'none'}`,
    );
  }
  const answer = await parts.front.decide(front, decisions);
  if (isRunStream(answer)) return uiStream(parts, answer);
  // Other tickets stay open: nothing runs yet.
  return parts.sse(
    (async function* () {
      yield { data: JSON.stringify({ type: 'finish', finishReason: 'tool-calls' }) };
      yield { data: '[DONE]' };
    })(),
    () => {},
    UI_MESSAGE_STREAM_HEADERS,
  );
}

/** `GET /chat/:id/stream`: the active run's UI message stream from the start of its invocation, or 204. */
export async function chatStream(parts: ApiParts, { params, resource }: RouteContext): Promise<Response> {
  const threadId = params[0]!;
  try {
    await parts.ownThread(threadId, resource);
  } catch {
    return new Response(null, { status: 204 });
  }
  const stream = await parts.front.active({ threadId, resource });
  return stream ? uiStream(parts, stream) : new Response(null, { status: 204 });
}

/** The chat's thread: the caller's, created when it does not exist yet. */
async function chatThread(parts: ApiParts, threadId: string, resource: string): Promise<string> {
  const existing = await parts.store.getThread(threadId);
  if (existing) return (await parts.ownThread(threadId, resource)).id;
  try {
    await parts.store.createThread({ id: threadId, resourceId: resource });
  } catch (error) {
    // Created meanwhile by another request: fine when it is the caller's.
    if (!LunationError.isInstance(error)) throw error;
  }
  return (await parts.ownThread(threadId, resource)).id;
}

/** The decisions in an assistant message's tool parts: approval responses and frontend tool outputs. */
function decisionsOf(parts: UIPart[], open: SuspensionTicket[]): ResumeDecision[] {
  const decisions: ResumeDecision[] = [];
  for (const part of parts) {
    if (!part.type.startsWith('tool-') && part.type !== 'dynamic-tool') continue;
    const approval = part.approval;
    if (part.state === 'approval-responded' && approval && open.some((ticket) => ticket.id === approval.id)) {
      decisions.push({
        decisionId: `chat:${approval.id}`,
        ticketId: approval.id,
        action: approval.approved ? 'resume' : 'cancel',
        ...(approval.reason ? { reason: approval.reason } : {}),
      });
      continue;
    }
    const ticket = open.find(
      (candidate) => candidate.toolCallId === part.toolCallId && candidate.action !== 'approve',
    );
    if (part.state === 'output-available' && ticket) {
      decisions.push({
        decisionId: `chat:${ticket.id}`,
        ticketId: ticket.id,
        action: 'resume',
        payload: (part.output ?? null) as ResumeDecision['payload'],
      });
    }
  }
  return decisions;
}

function uiStream(parts: ApiParts, stream: RunStream): Response {
  return parts.sse(
    (async function* () {
      for await (const chunk of toUIMessageChunks(stream.records))
        yield { data: JSON.stringify(chunk satisfies UIMessageChunk) };
      yield { data: '[DONE]' };
    })(),
    () => stream.detach(),
    UI_MESSAGE_STREAM_HEADERS,
  );
}
