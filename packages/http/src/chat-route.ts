import type { ResumeDecision, RunEventRecord, SuspensionTicket } from '@lunation/contract';
import { LunationError } from '@lunation/contract';
import { z } from 'zod';
import type { ApiParts, RouteContext } from './api-parts.js';
import { isRunStream, type RunStream } from './front.js';
import { HttpError, jsonResponse } from './http-error.js';
import { readBody } from './request-body.js';
import {
  finishedMessageChunks,
  toUIMessageChunks,
  UI_MESSAGE_STREAM_HEADERS,
  type UIMessageChunk,
} from './ui-message-stream.js';
import { type ChatUIMessage, threadUIMessages, toChatUIMessages } from './ui-messages.js';

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
  // The message answered: the one named by `messageId` (an approval's assistant message), else the last.
  const last =
    body.messages.find((message) => body.messageId && message.id === body.messageId) ?? body.messages.at(-1)!;
  if (last.role === 'user') {
    const text = last.parts
      .filter((part) => part.type === 'text' && typeof part.text === 'string')
      .map((part) => part.text)
      .join('\n');
    if (text.trim() === '')
      throw new HttpError(400, 'invalid-argument', 'The last message has no text to send');
    const send = async () => {
      const threadId = await chatThread(parts, body.id, resource);
      return parts.front.send({ threadId, resource }, text);
    };
    return uiStream(parts, await parts.starting.track(body.id, send()));
  }
  const threadId = await chatThread(parts, body.id, resource);
  const front = { threadId, resource };
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

/**
 * `GET /chat/:id/stream`: the active run's whole assistant message as a UI message stream (its earlier
 * invocations' events first, or its stored message when they are no longer logged; a fleet's run not yet started
 * from its first event), then live. When none runs:
 * the latest run's stored message, whole and finished, if it ended less than `chatReplayMs` ago (a page that read
 * its history while the run went on holds only a part of it); else 204.
 */
export async function chatStream(parts: ApiParts, { params, resource }: RouteContext): Promise<Response> {
  const threadId = params[0]!;
  if (!(await ownsThread(parts, threadId, resource))) return new Response(null, { status: 204 });
  const stream = await parts.front.active({ threadId, resource });
  if (!stream) return finishedStream(parts, threadId);
  const earlier = stream.earlier ?? [];
  if (stream.unstarted || earlier.some(({ event }) => event.type === 'run-start' && !event.resumed))
    return uiStream(parts, stream);
  // The run's first invocation is no longer logged here: its message as stored before this invocation comes first.
  const records = stream.records[Symbol.asyncIterator]();
  const first = await records.next();
  const start = earlier.find(({ event }) => event.type === 'run-start')?.event ?? first.value?.event;
  if (start?.type !== 'run-start' || !start.resumed)
    return uiStream(parts, stream, { records: rest(first, records) });
  const stored = (await parts.store.listMessages(threadId)).filter(
    (record) => record.runId === start.identity.runId && record.createdAt < start.timestamp,
  );
  const message = toChatUIMessages(stored, { dynamicTool: parts.dynamicTool }).find(
    (candidate) => candidate.role === 'assistant',
  );
  return uiStream(parts, stream, { records: rest(first, records), ...(message ? { stored: message } : {}) });
}

/** The latest run's stored message as a finished UI message stream, if it ended within `chatReplayMs`; else 204. */
async function finishedStream(parts: ApiParts, threadId: string): Promise<Response> {
  const latest = await parts.store.getLatestRun(threadId);
  const ended = latest !== undefined && latest.status !== 'running' && latest.status !== 'created';
  if (!ended || Date.now() - latest.updatedAt > parts.chatReplayMs)
    return new Response(null, { status: 204 });
  const runId = latest.identity.runId;
  const records = (await parts.store.listMessages(threadId)).filter((record) => record.runId === runId);
  const message = toChatUIMessages(records, {
    dynamicTool: parts.dynamicTool,
    openTickets: latest.status === 'waiting' ? latest.openTickets : [],
  }).find((candidate) => candidate.role === 'assistant');
  if (!message) return new Response(null, { status: 204 });
  return parts.sse(
    (async function* () {
      for (const chunk of finishedMessageChunks(message, latest)) yield { data: JSON.stringify(chunk) };
      yield { data: '[DONE]' };
    })(),
    () => {},
    UI_MESSAGE_STREAM_HEADERS,
  );
}

/**
 * `GET /chat/:id/messages`: the thread's messages as AI SDK UI messages (`[]` for a thread not the caller's), with
 * the question of a run not yet stored (the active run's input, and a send of the thread this server is starting,
 * waited for up to 5 s): the page resumes that run's answer next.
 */
export async function chatMessages(parts: ApiParts, { params, resource }: RouteContext): Promise<Response> {
  const threadId = params[0]!;
  await parts.starting.settled(threadId, 5_000);
  if (!(await ownsThread(parts, threadId, resource))) return jsonResponse(200, { messages: [] });
  // Read before the stored messages: a run that stores its input and ends in between is found there.
  const input = (await parts.front.activeInput?.({ threadId, resource })) ?? [];
  return jsonResponse(200, {
    messages: await threadUIMessages(parts.store, threadId, { dynamicTool: parts.dynamicTool, input }),
  });
}

const stopBodySchema = z.looseObject({ messageId: z.string().min(1).optional() }).optional();

/**
 * `POST /chat/:id/stop`: what a page's Stop button calls before `chat.stop()` (which only closes its request).
 * Cancels the thread's active run, unless `messageId` names another run (a stale stop); waits briefly for it to
 * end and answers the thread's UI messages, for `chat.setMessages`.
 */
export async function chatStop(
  parts: ApiParts,
  { request, params, resource }: RouteContext,
): Promise<Response> {
  const body = await readBody(stopBodySchema, request, parts.bodyLimits);
  const thread = await parts.ownThread(params[0]!, resource);
  const latest = await parts.store.getLatestRun(thread.id);
  const runId = latest?.identity.runId;
  const current = latest !== undefined && latest.status !== 'done';
  let cancelled = false;
  if (current && (body?.messageId === undefined || body.messageId === runId)) {
    const answer = await parts.front.cancel({ threadId: thread.id, resource });
    cancelled = (answer.body as { cancelled?: unknown } | null)?.cancelled === true;
    await runEnded(parts, thread.id, runId!);
  }
  return jsonResponse(200, {
    cancelled,
    runId: runId ?? null,
    messages: await threadUIMessages(parts.store, thread.id, { dynamicTool: parts.dynamicTool }),
  });
}

/** Waits up to 5 s for the run to stop running (a local cancel ends it within a step). */
async function runEnded(parts: ApiParts, threadId: string, runId: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const latest = await parts.store.getLatestRun(threadId);
    if (latest?.identity.runId !== runId || (latest.status !== 'running' && latest.status !== 'created'))
      return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function ownsThread(parts: ApiParts, threadId: string, resource: string): Promise<boolean> {
  try {
    await parts.ownThread(threadId, resource);
    return true;
  } catch (error) {
    if (error instanceof HttpError && error.status === 404) return false;
    throw error;
  }
}

/** `first` and the rest of `others`, ending `others` when the reader stops early. */
async function* rest<T>(first: IteratorResult<T>, others: AsyncIterator<T>): AsyncIterable<T> {
  if (first.done) return;
  try {
    yield first.value;
    for (let next = await others.next(); !next.done; next = await others.next()) yield next.value;
  } finally {
    await others.return?.();
  }
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

function uiStream(
  parts: ApiParts,
  stream: RunStream,
  {
    records = stream.records,
    stored,
  }: { records?: AsyncIterable<RunEventRecord>; stored?: ChatUIMessage } = {},
): Response {
  const options = {
    dynamicTool: parts.dynamicTool,
    ...(stream.earlier ? { earlier: stream.earlier } : {}),
    ...(stored ? { stored } : {}),
  };
  return parts.sse(
    (async function* () {
      for await (const chunk of toUIMessageChunks(records, options))
        yield { data: JSON.stringify(chunk satisfies UIMessageChunk) };
      yield { data: '[DONE]' };
    })(),
    () => stream.detach(),
    UI_MESSAGE_STREAM_HEADERS,
  );
}
