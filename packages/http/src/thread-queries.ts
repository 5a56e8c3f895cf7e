import type { JsonSchema, JsonValue, LunationStore, ThreadRecord } from '@lunation/contract';

/** How many threads one search request reads at most. */
export const SEARCH_SCAN_LIMIT = 500;
/** How many threads the inbox reads at most. */
export const INBOX_SCAN_LIMIT = 1_000;

/** A thread of the caller whose latest run waits for decisions, with its open tickets. */
export interface InboxThread {
  thread: ThreadRecord;
  runId: string;
  tickets: Array<{
    ticketId: string;
    toolCallId: string;
    toolName: string;
    /** The call's arguments, parsed (the raw text when it is not JSON). */
    arguments: unknown;
    action: string;
    message: string;
    /** What the tool passed along with its question (e.g. choices), when it did. */
    parameters?: JsonValue;
    /** The JSON Schema the decision's payload must satisfy, when the ticket asks for input (a form). */
    responseSchema?: JsonSchema;
  }>;
}

/**
 * One page of the resource's threads that match `search` (case-insensitive, in `metadata.title`, the metadata as
 * JSON, or the first message's text), scanning at most {@link SEARCH_SCAN_LIMIT} threads: a page may hold fewer
 * than `limit`; `nextCursor` continues the scan.
 */
export async function searchThreads(
  store: LunationStore,
  options: { resourceId: string; search: string; limit: number; cursor: string | undefined },
): Promise<{ threads: ThreadRecord[]; nextCursor: string | undefined }> {
  const needle = options.search.toLowerCase();
  const threads: ThreadRecord[] = [];
  let cursor = options.cursor;
  let scanned = 0;
  do {
    const page = await store.listThreads({
      resourceId: options.resourceId,
      limit: options.limit - threads.length,
      ...(cursor ? { cursor } : {}),
    });
    scanned += page.items.length;
    const matches = await Promise.all(page.items.map((thread) => matchesSearch(store, thread, needle)));
    threads.push(...page.items.filter((_, index) => matches[index]));
    cursor = page.nextCursor;
  } while (cursor !== undefined && threads.length < options.limit && scanned < SEARCH_SCAN_LIMIT);
  return { threads, nextCursor: cursor };
}

async function matchesSearch(store: LunationStore, thread: ThreadRecord, needle: string): Promise<boolean> {
  const title = thread.metadata.title;
  if (typeof title === 'string' && title.toLowerCase().includes(needle)) return true;
  if (JSON.stringify(thread.metadata).toLowerCase().includes(needle)) return true;
  if (thread.messageCount === 0) return false;
  const [first] = await store.listMessages(thread.id, { fromSeq: 1, limit: 1 });
  const text = (first?.message.content ?? [])
    .map((part) => (part.type === 'text' ? part.text : ''))
    .join(' ')
    .toLowerCase();
  return text.includes(needle);
}

/** The resource's threads waiting for decisions (scanning at most {@link INBOX_SCAN_LIMIT} threads). */
export async function inbox(store: LunationStore, resourceId: string): Promise<InboxThread[]> {
  const waiting: InboxThread[] = [];
  let cursor: string | undefined;
  let scanned = 0;
  do {
    const page = await store.listThreads({ resourceId, limit: 100, ...(cursor ? { cursor } : {}) });
    scanned += page.items.length;
    const runs = await Promise.all(page.items.map((thread) => store.getLatestRun(thread.id)));
    page.items.forEach((thread, index) => {
      const run = runs[index];
      if (run?.status !== 'waiting' || run.openTickets.length === 0) return;
      waiting.push({
        thread,
        runId: run.identity.runId,
        tickets: run.openTickets.map((ticket) => ({
          ticketId: ticket.id,
          toolCallId: ticket.toolCallId,
          toolName: ticket.toolName,
          arguments: parseJson(ticket.arguments),
          action: ticket.action,
          message: ticket.message,
          ...(ticket.parameters === undefined ? {} : { parameters: ticket.parameters }),
          ...(ticket.responseSchema === undefined ? {} : { responseSchema: ticket.responseSchema }),
        })),
      });
    });
    cursor = page.nextCursor;
  } while (cursor !== undefined && scanned < INBOX_SCAN_LIMIT);
  return waiting;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
