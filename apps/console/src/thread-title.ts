import type { ThreadRecord } from './api-types.js';

const TITLE_LENGTH = 60;

/** The title a thread gets from its first message: the first line, cut at a word near 60 characters. */
export function titleFromMessage(text: string): string {
  const line = text.trim().split('\n')[0]!.replace(/\s+/g, ' ').trim();
  if (line.length <= TITLE_LENGTH) return line;
  const cut = line.slice(0, TITLE_LENGTH);
  const space = cut.lastIndexOf(' ');
  return `${(space > TITLE_LENGTH / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** The thread's stored title (`metadata.title`), if it has one. */
export function storedTitle(thread: Pick<ThreadRecord, 'metadata'>): string | undefined {
  const title = thread.metadata?.title;
  return typeof title === 'string' && title.trim() ? title.trim() : undefined;
}

/** A thread's title for lists: its stored title, else "Untitled thread" (never its id). */
export function titleOf(thread: Pick<ThreadRecord, 'metadata'>): string {
  return storedTitle(thread) ?? 'Untitled thread';
}
