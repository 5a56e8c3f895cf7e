import type { LunationStore, Message, MessageRecord, SuspensionTicket } from '@lunation/contract';
import { isDynamicToolName } from './dynamic-tool-name.js';

/**
 * A message as the AI SDK's `useChat` keeps it (`UIMessage` of `ai` 6 and 7), built without depending on `ai`:
 * pass `messages` as `useChat({ messages })` (cast to your `UIMessage` type).
 */
export interface ChatUIMessage {
  /** A user message's own id; an assistant message's is its run id, as in the UI message stream. */
  id: string;
  role: 'user' | 'assistant';
  metadata: { threadId: string; runId?: string };
  parts: ChatUIPart[];
}

/** A part of a {@link ChatUIMessage}: `text`, `reasoning`, `file`, `step-start`, `tool-<name>` or `dynamic-tool`. */
export type ChatUIPart = { type: string } & Record<string, unknown>;

/** Options of {@link toChatUIMessages} and {@link threadUIMessages}. */
export interface ChatUIMessagesOptions {
  /** The open tickets of the thread's waiting run: their `approve` calls are `approval-requested`. */
  openTickets?: SuspensionTicket[];
  /** Whether a tool's parts are `dynamic-tool`. @default {@link isDynamicToolName} */
  dynamicTool?: (toolName: string) => boolean;
}

/**
 * A thread's stored messages as AI SDK UI messages: user messages with their text (and images as `file` parts);
 * each run's assistant and tool messages as one assistant message (id: the run id, one `step-start` per step)
 * whose tool parts carry their input, their result (`output-available`, `output-error`, or `output-denied` for a
 * declined or cancelled call) or an open approval (`approval-requested`, approval id = ticket id). System and
 * internal messages are left out.
 */
export function toChatUIMessages(
  records: MessageRecord[],
  options: ChatUIMessagesOptions = {},
): ChatUIMessage[] {
  const dynamicTool = options.dynamicTool ?? isDynamicToolName;
  const approvals = new Map(
    (options.openTickets ?? [])
      .filter((ticket) => ticket.action === 'approve')
      .map((ticket) => [ticket.toolCallId, ticket.id]),
  );
  const messages: ChatUIMessage[] = [];
  const tools = new Map<string, ChatUIPart>();
  for (const { threadId, runId, message } of records) {
    if (message.role === 'system' || message.metadata?.visibility === 'internal') continue;
    const metadata = { threadId, ...(runId ? { runId } : {}) };
    if (message.role === 'user') {
      messages.push({ id: message.id, role: 'user', metadata, parts: userParts(message) });
      continue;
    }
    let assistant = messages.at(-1);
    const id = runId ?? message.id;
    if (assistant?.role !== 'assistant' || assistant.id !== id) {
      assistant = { id, role: 'assistant', metadata, parts: [] };
      messages.push(assistant);
    }
    if (message.role === 'tool') {
      for (const { toolCallId, result } of message.content) {
        const part = tools.get(toolCallId);
        if (!part) continue;
        const declined = ['declined', 'cancelled', 'superseded'].some(
          (key) => result.metadata?.[key] === true,
        );
        if (declined) Object.assign(part, { state: 'output-denied' });
        else if (result.status === 'error')
          Object.assign(part, { state: 'output-error', errorText: result.message ?? 'The tool failed' });
        else
          Object.assign(part, { state: 'output-available', output: result.data ?? result.message ?? null });
      }
      continue;
    }
    assistant.parts.push({ type: 'step-start' });
    for (const part of message.content) {
      if (part.type === 'text' || part.type === 'refusal') {
        assistant.parts.push({ type: 'text', text: part.text, state: 'done' });
      } else if (part.type === 'reasoning' && !part.redacted) {
        assistant.parts.push({ type: 'reasoning', text: part.text, state: 'done' });
      } else if (part.type === 'tool-call') {
        const approval = approvals.get(part.toolCallId);
        const tool: ChatUIPart = {
          ...(dynamicTool(part.toolName)
            ? { type: 'dynamic-tool', toolName: part.toolName }
            : { type: `tool-${part.toolName}` }),
          toolCallId: part.toolCallId,
          state: approval ? 'approval-requested' : 'input-available',
          input: parseArguments(part.arguments),
          ...(approval ? { approval: { id: approval } } : {}),
        };
        tools.set(part.toolCallId, tool);
        assistant.parts.push(tool);
      }
    }
  }
  return messages.filter((message) => message.parts.length > 0);
}

/** Options of {@link threadUIMessages}. */
export interface ThreadUIMessagesOptions extends Pick<ChatUIMessagesOptions, 'dynamicTool'> {
  /**
   * The thread's active run's input (`RunFront.activeInput`): its user messages the store does not hold yet come
   * last, as the run's first checkpoint will store them.
   */
  input?: Message[];
}

/**
 * A thread's stored messages as AI SDK UI messages (see {@link toChatUIMessages}), with the open approvals of
 * its latest run when it waits: what `useChat({ messages })` starts from after a reload.
 */
export async function threadUIMessages(
  store: LunationStore,
  threadId: string,
  { input = [], ...options }: ThreadUIMessagesOptions = {},
): Promise<ChatUIMessage[]> {
  const [records, latest] = await Promise.all([store.listMessages(threadId), store.getLatestRun(threadId)]);
  const messages = toChatUIMessages(records, {
    ...options,
    openTickets: latest?.status === 'waiting' ? latest.openTickets : [],
  });
  const stored = new Set(records.map((record) => record.message.id));
  for (const message of input) {
    if (message.role !== 'user' || stored.has(message.id)) continue;
    messages.push({ id: message.id, role: 'user', metadata: { threadId }, parts: userParts(message) });
  }
  return messages;
}

function userParts(message: Extract<Message, { role: 'user' }>): ChatUIPart[] {
  return message.content.map((part) =>
    part.type === 'text'
      ? { type: 'text', text: part.text }
      : part.source.type === 'url'
        ? { type: 'file', mediaType: 'image/*', url: part.source.url }
        : {
            type: 'file',
            mediaType: part.source.mediaType,
            url: `data:${part.source.mediaType};base64,${part.source.data}`,
          },
  );
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
