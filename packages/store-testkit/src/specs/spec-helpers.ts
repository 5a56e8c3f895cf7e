import type { JsonObject, LunationStore, Message, RunRecord, ThreadRecord } from '@lunation/contract';
import { expect } from 'vitest';
import { makeUserMessage, uniqueId } from '../fixtures.js';

/** Slack allowed between the test's clock and the store's clock when checking timestamps. */
export const clockSlackMs = 1000;

/** Asserts `value` is an epoch-ms timestamp taken between `before` and `after` (with clock slack). */
export function expectTimestampBetween(value: unknown, before: number, after: number): void {
  expect(Number.isInteger(value), `timestamp ${String(value)} is an integer`).toBe(true);
  expect(value as number).toBeGreaterThanOrEqual(before - clockSlackMs);
  expect(value as number).toBeLessThanOrEqual(after + clockSlackMs);
}

/** Validates `value` against a zod schema, failing with the issues. */
export function expectSchema(
  schema: { safeParse(value: unknown): { success: boolean; error?: { issues: unknown[] } } },
  value: unknown,
): void {
  const result = schema.safeParse(value);
  expect(result.error?.issues ?? [], 'schema issues').toEqual([]);
  expect(result.success).toBe(true);
}

/** Creates a thread with a fresh id. */
export function createThread(
  store: LunationStore,
  input: { resourceId?: string } = {},
): Promise<ThreadRecord> {
  return store.createThread({ id: uniqueId('thread'), ...input });
}

/** Commits `messages` (by default `count` user messages) after the thread's current count. */
export async function appendMessages(
  store: LunationStore,
  threadId: string,
  messages: Message[] | number,
  extra: { run?: RunRecord; threadState?: JsonObject } = {},
): Promise<Message[]> {
  const list =
    typeof messages === 'number'
      ? Array.from({ length: messages }, (_, index) => makeUserMessage(`message ${index + 1}`))
      : messages;
  const thread = await store.getThread(threadId);
  if (thread === undefined) throw new Error(`appendMessages: thread "${threadId}" does not exist`);
  await store.commit({
    threadId,
    expectedMessageCount: thread.messageCount,
    messages: list,
    ...(extra.run === undefined ? {} : { run: extra.run }),
    ...(extra.threadState === undefined ? {} : { threadState: extra.threadState }),
  });
  return list;
}

/** Pages through `list` until `nextCursor` is absent, returning every page (fails after `maxPages`). */
export async function collectPages<T>(
  list: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string }>,
  maxPages = 100,
): Promise<T[][]> {
  const pages: T[][] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await list(cursor);
    pages.push(page.items);
    if (page.nextCursor === undefined) return pages;
    expect(typeof page.nextCursor).toBe('string');
    if (pages.length >= maxPages) throw new Error(`Pagination did not end after ${maxPages} pages`);
    cursor = page.nextCursor;
  }
}
