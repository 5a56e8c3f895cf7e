import type { AgentEvent, MessageRecord, SuspensionTicket, ToolResult } from '@lunation/contract';

/** One tool call as the chat shows it: its arguments, then its progress and result as they come. */
export interface ToolEntry {
  kind: 'tool';
  toolCallId: string;
  toolName: string;
  arguments: string;
  /** `stopped`: the run was stopped (or a new message came) before the call finished; `declined`: denied. */
  state: 'calling' | 'running' | 'waiting' | 'done' | 'error' | 'stopped' | 'declined';
  progress?: unknown;
  result?: ToolResult;
  /** The result came from the execution ledger: the tool did not run again. */
  fromLedger?: boolean;
  /** An earlier attempt died mid-way (a crash): the tool ran again with the same idempotency key. */
  rerun?: boolean;
}

/** What the chat shows, in order. */
export type Entry =
  | { kind: 'user'; key: string; text: string }
  | { kind: 'assistant'; key: string; text: string; reasoning: string }
  | (ToolEntry & { key: string })
  | { kind: 'notice'; key: string; text: string; tone: 'info' | 'error' };

/** The chat of a thread: its committed history, then the live run's entries. */
export interface Transcript {
  entries: Entry[];
  openTickets: SuspensionTicket[];
}

/** The state a finished call shows: a stopped or declined call is not a failure. */
export function settledState(result: ToolResult): ToolEntry['state'] {
  if (result.status !== 'error') return 'done';
  if (result.metadata?.cancelled === true || result.metadata?.superseded === true) return 'stopped';
  if (result.metadata?.declined === true) return 'declined';
  return 'error';
}

/** A tool call's entry key, the same live and from the store (so a reload keeps its element, and focus). */
export function toolKey(toolCallId: string): string {
  return `call:${toolCallId}`;
}

/** The transcript of a thread's committed messages. */
export function transcriptOf(records: readonly MessageRecord[]): Entry[] {
  const entries: Entry[] = [];
  const tools = new Map<string, ToolEntry & { key: string }>();
  for (const { message, seq } of records) {
    if (message.role === 'user') {
      const text = message.content.map((part) => (part.type === 'text' ? part.text : '[image]')).join('');
      entries.push({ kind: 'user', key: `m${seq}`, text });
    } else if (message.role === 'assistant') {
      let text = '';
      let reasoning = '';
      for (const part of message.content) {
        if (part.type === 'text') text += part.text;
        else if (part.type === 'reasoning') reasoning += part.text;
        else if (part.type === 'refusal') text += part.text;
      }
      if (text || reasoning) entries.push({ kind: 'assistant', key: `m${seq}`, text, reasoning });
      for (const part of message.content) {
        if (part.type !== 'tool-call') continue;
        const entry: ToolEntry & { key: string } = {
          kind: 'tool',
          key: entries.some((other) => other.key === toolKey(part.toolCallId))
            ? `${toolKey(part.toolCallId)}:m${seq}`
            : toolKey(part.toolCallId),
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          arguments: part.arguments,
          state: 'waiting',
        };
        tools.set(part.toolCallId, entry);
        entries.push(entry);
      }
    } else if (message.role === 'tool') {
      for (const part of message.content) {
        const entry = tools.get(part.toolCallId);
        if (!entry) continue;
        entry.result = part.result;
        entry.state = settledState(part.result);
      }
    }
  }
  return entries;
}

/** Adds a live event to the entries (returns a new array; entries it changes are copied). */
export function applyEvent(entries: readonly Entry[], event: AgentEvent): Entry[] {
  const next = [...entries];
  const key = `${event.identity.runId}:${event.seq}`;
  const lastAssistant = (): number => {
    const index = next.length - 1;
    return next[index]?.kind === 'assistant' ? index : -1;
  };
  // A provider may reuse a call id in a later run of the thread: the entry key stays unique.
  const callKey = (toolCallId: string) =>
    next.some((entry) => entry.key === toolKey(toolCallId))
      ? `${toolKey(toolCallId)}:${key}`
      : toolKey(toolCallId);
  const updateTool = (
    toolCallId: string,
    change: (entry: ToolEntry & { key: string }) => Partial<ToolEntry>,
  ) => {
    const index = next.findLastIndex((entry) => entry.kind === 'tool' && entry.toolCallId === toolCallId);
    const entry = next[index];
    if (entry?.kind === 'tool') next[index] = { ...entry, ...change(entry) };
  };
  switch (event.type) {
    case 'run-start':
      for (const message of event.input) {
        if (message.role !== 'user') continue;
        const text = message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
        next.push({ kind: 'user', key, text });
      }
      if (event.resumed)
        next.push({ kind: 'notice', key: `${key}r`, text: 'The run continues.', tone: 'info' });
      break;
    case 'text-delta':
    case 'reasoning-delta': {
      const index = lastAssistant();
      const current =
        index === -1 ? { kind: 'assistant' as const, key, text: '', reasoning: '' } : (next[index] as Entry);
      if (current.kind !== 'assistant') break;
      const updated =
        event.type === 'text-delta'
          ? { ...current, text: current.text + event.delta }
          : { ...current, reasoning: current.reasoning + event.delta };
      if (index === -1) next.push(updated);
      else next[index] = updated;
      break;
    }
    case 'tool-call-start':
      next.push({
        kind: 'tool',
        key: callKey(event.toolCallId),
        toolCallId: event.toolCallId,
        toolName: event.toolName,
        arguments: '',
        state: 'calling',
      });
      break;
    case 'tool-call-delta':
      updateTool(event.toolCallId, (entry) => ({ arguments: entry.arguments + event.argumentsDelta }));
      break;
    case 'tool-call-end':
      updateTool(event.toolCallId, () => ({ arguments: event.arguments }));
      break;
    case 'tool-execution-start':
      if (!next.some((entry) => entry.kind === 'tool' && entry.toolCallId === event.toolCallId)) {
        next.push({
          kind: 'tool',
          key: callKey(event.toolCallId),
          toolCallId: event.toolCallId,
          toolName: event.toolName,
          arguments: '',
          state: 'running',
        });
      }
      updateTool(event.toolCallId, () => ({ state: 'running', rerun: event.rerun }));
      break;
    case 'tool-progress':
      updateTool(event.toolCallId, () => ({ progress: event.progress }));
      break;
    case 'tool-result':
      updateTool(event.toolCallId, () => ({
        state: settledState(event.result),
        result: event.result,
        fromLedger: event.fromLedger,
      }));
      break;
    case 'tool-call-suspended':
      updateTool(event.ticket.toolCallId, () => ({ state: 'waiting' }));
      break;
    case 'error':
      next.push({ kind: 'notice', key, text: event.error.message, tone: 'error' });
      break;
    case 'run-end':
      if (event.termination.type === 'cancelled')
        next.push({ kind: 'notice', key, text: 'Stopped.', tone: 'info' });
      break;
    default:
      break;
  }
  return next;
}
