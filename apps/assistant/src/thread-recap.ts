import { type MessageRecord, messageText } from '@lunation/contract';

/** How many messages a recap shows at most. */
export const RECAP_MESSAGES = 4;

/**
 * The last few user and assistant texts of a thread, one line each (`you> …`, `assistant> …`), cut to `width`
 * characters. Tool results and internal messages are left out.
 */
export function recapLines(records: readonly MessageRecord[], width = 100): string[] {
  const lines: string[] = [];
  for (const { message } of records) {
    if (message.role !== 'user' && message.role !== 'assistant') continue;
    if (message.metadata?.visibility === 'internal') continue;
    const text = messageText(message).replace(/\s+/g, ' ').trim();
    if (text === '') continue;
    const line = `${message.role === 'user' ? 'you' : 'assistant'}> ${text}`;
    lines.push(line.length > width ? `${line.slice(0, width - 1)}…` : line);
  }
  return lines.slice(-RECAP_MESSAGES);
}
