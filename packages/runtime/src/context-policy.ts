import type { Message, SystemMessage } from '@lunation/contract';

/** How much history an agent sends to its model. */
export interface ContextPolicy {
  /** Token budget of the history sent per request (estimated at ~4 characters per token). */
  maxTokens?: number;
  /** Messages always kept, newest first, whatever the budget. @default 2 */
  minRecentMessages?: number;
  /** Summarise older history once it grows past `thresholdTokens`. */
  compaction?: CompactionPolicy;
}

/** When and how older history is summarised. */
export interface CompactionPolicy {
  thresholdTokens: number;
  /** Newest messages left out of the summary. @default 6 */
  keepRecentMessages?: number;
  /** Instruction given to the model. */
  prompt?: string;
}

/** The instruction a compaction gives the model when the policy has no `prompt`. */
export const DEFAULT_COMPACTION_PROMPT =
  'Summarise the conversation so far for your own later use: the user, their goals, decisions taken, facts ' +
  'learned, tool results that still matter and open questions. Be concise and complete; answer with the summary only.';

/** A rough token estimate: about four characters per token. */
export function estimateTokens(messages: readonly Message[]): number {
  let characters = 0;
  for (const message of messages) characters += estimateMessageCharacters(message);
  return Math.ceil(characters / 4);
}

function estimateMessageCharacters(message: Message): number {
  let characters = 16;
  for (const part of message.content) {
    switch (part.type) {
      case 'text':
      case 'reasoning':
        characters += part.text.length;
        break;
      case 'tool-call':
        characters += part.toolName.length + part.arguments.length;
        break;
      case 'tool-result':
        characters +=
          (part.result.message?.length ?? 0) +
          (part.result.data === undefined ? 0 : JSON.stringify(part.result.data).length);
        break;
      case 'image':
        characters += 3000;
        break;
    }
  }
  return characters;
}

/**
 * Keeps the leading system messages and the newest messages within `maxTokens`, never separating a tool call
 * from its results: an assistant message with tool calls and the tool messages answering it go or stay together.
 */
export function truncateMessages(messages: readonly Message[], policy: ContextPolicy): Message[] {
  if (policy.maxTokens === undefined) return [...messages];
  let start = 0;
  while (start < messages.length && messages[start]?.role === 'system') start++;
  const head = messages.slice(0, start);
  const units: Message[][] = [];
  for (let index = start; index < messages.length; index++) {
    const message = messages[index] as Message;
    const last = units[units.length - 1];
    if (message.role === 'tool' && last) last.push(message);
    else units.push([message]);
  }
  let budget = policy.maxTokens - estimateTokens(head);
  const minRecent = policy.minRecentMessages ?? 2;
  const kept: Message[][] = [];
  let keptMessages = 0;
  for (let index = units.length - 1; index >= 0; index--) {
    const unit = units[index] as Message[];
    const cost = estimateTokens(unit);
    if (keptMessages >= minRecent && cost > budget) break;
    budget -= cost;
    keptMessages += unit.length;
    kept.push(unit);
  }
  kept.reverse();
  // A kept history must not start with tool results whose call was dropped.
  const tail = kept.flat();
  while (tail[0]?.role === 'tool') tail.shift();
  return [...head, ...tail];
}

/** The range a compaction summary covers, from its metadata. */
export function summaryRange(message: Message): { fromSeq: number; toSeq: number } | undefined {
  const compaction = message.metadata?.compaction as { fromSeq?: unknown; toSeq?: unknown } | undefined;
  if (!compaction || typeof compaction.fromSeq !== 'number' || typeof compaction.toSeq !== 'number')
    return undefined;
  return { fromSeq: compaction.fromSeq, toSeq: compaction.toSeq };
}

/**
 * The history as the model should see it: the latest summary (as a system message) replaces the messages it
 * covers. `history[i]` has seq `i + 1`.
 */
export function applyCompaction(history: readonly Message[]): Message[] {
  let latest: { index: number; toSeq: number } | undefined;
  for (let index = history.length - 1; index >= 0; index--) {
    const range = summaryRange(history[index] as Message);
    if (range) {
      latest = { index, toSeq: range.toSeq };
      break;
    }
  }
  if (!latest) return history.filter((message) => summaryRange(message) === undefined);
  const summary = history[latest.index] as SystemMessage;
  const rest = history.slice(latest.toSeq).filter((message) => summaryRange(message) === undefined);
  return [summary, ...rest];
}
