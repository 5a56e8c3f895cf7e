import { randomUUID } from 'node:crypto';
import type { UIMessage } from 'ai';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatPageState } from '../src/chat-page.js';
import {
  answerFor,
  type ChatApi,
  launchChromium,
  type PageServer,
  readingModel,
  startChatApi,
  startPageServer,
  TOKEN,
} from './chat-servers.js';

/** How many runs (each asks for an approval); `LUNATION_USE_CHAT_RUNS` raises it for a longer soak. */
const RUNS = Number(process.env.LUNATION_USE_CHAT_RUNS ?? 50);
/** Runs per thread: later runs reload onto a history of earlier ones. */
const RUNS_PER_THREAD = 5;
const SEED = Number(process.env.LUNATION_USE_CHAT_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** mulberry32: a small seeded generator, so a failing sequence of reload instants replays. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** When a run's page reloads: never, before the approval, right after it (0–40 ms) or while the answer streams. */
type ReloadPlan =
  | { at: 'none' }
  | { at: 'before-approval'; delayMs: number }
  | { at: 'after-approval'; delayMs: number }
  | { at: 'mid-answer'; delayMs: number };

function planOf(random: () => number): ReloadPlan {
  const pick = random();
  if (pick < 0.1) return { at: 'none' };
  if (pick < 0.35) return { at: 'before-approval', delayMs: Math.floor(random() * 150) };
  if (pick < 0.7) return { at: 'after-approval', delayMs: Math.floor(random() * 40) };
  return { at: 'mid-answer', delayMs: 40 + Math.floor(random() * 700) };
}

/** Each part of a message, as the test compares them: a tool part with its call and state, a text part's text. */
function partsOf(message: UIMessage): string[] {
  return message.parts.flatMap((part) => {
    if (part.type === 'text') return [`text:${part.text}`];
    if (part.type === 'dynamic-tool' || part.type.startsWith('tool-')) {
      const tool = part as unknown as { toolCallId: string; state: string; output?: unknown };
      return [`${part.type}:${tool.state}:${String(tool.output)}`];
    }
    return [];
  });
}

/** What the page must show after `count` finished runs of the thread: each part exactly once. */
function expectedMessages(paths: string[]): Array<{ role: string; parts: string[] }> {
  return paths.flatMap((path) => [
    { role: 'user', parts: [`text:read ${path}`] },
    {
      role: 'assistant',
      parts: [`tool-read_file:output-available:contents of ${path}`, `text:${answerFor(path)}`],
    },
  ]);
}

let browser: Browser;
let pages: PageServer;
let api: ChatApi;

beforeAll(async () => {
  browser = await launchChromium();
  pages = await startPageServer();
  api = await startChatApi(pages.origin, readingModel());
}, 60_000);

afterAll(async () => {
  await api?.close();
  await pages?.close();
  await browser?.close();
});

async function chatState(page: Page): Promise<ChatPageState | undefined> {
  return page.evaluate(() => window.chatState);
}

/** Waits until the page's chat satisfies `predicate` (run in the page: it may use only its arguments), up to 20 s. */
async function waitForChat<Argument>(
  page: Page,
  predicate: (state: ChatPageState, argument: Argument) => boolean,
  argument: Argument,
): Promise<void> {
  const expression = `window.chatState !== undefined && (${predicate.toString()})(window.chatState, ${JSON.stringify(argument)}) === true`;
  await page.waitForFunction(expression, undefined, { timeout: 20_000, polling: 20 });
}

async function openThread(page: Page, threadId: string): Promise<void> {
  const query = new URLSearchParams({ api: api.url, thread: threadId, token: TOKEN });
  await page.goto(`${pages.origin}/?${query}`);
}

/** Approves the open call from the page, once its card shows (if the run still waits for it). */
async function approveIfAsked(page: Page): Promise<boolean> {
  await waitForChat(
    page,
    (state) =>
      state.status === 'ready' ||
      state.messages.some((message) =>
        message.parts.some((part) => 'state' in part && part.state === 'approval-requested'),
      ),
    null,
  );
  const button = page.getByRole('button', { name: /^Approve / });
  if ((await button.count()) === 0) return false;
  await button.click();
  return true;
}

describe(`useChat from @ai-sdk/react (ai 7) in Chromium against @lunation/http on another origin (seed ${SEED})`, () => {
  it(`shows every part of ${RUNS} approved runs exactly once through reloads at random instants`, async () => {
    const random = generator(SEED);
    const replay = `LUNATION_USE_CHAT_SEED=${SEED} LUNATION_USE_CHAT_RUNS=${RUNS} pnpm vitest run --project ai-sdk-react`;
    const plans: Record<ReloadPlan['at'], number> = {
      none: 0,
      'before-approval': 0,
      'after-approval': 0,
      'mid-answer': 0,
    };
    const context = await browser.newContext();
    const page = await context.newPage();
    const consoleErrors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    try {
      let threadId = '';
      let paths: string[] = [];
      for (let run = 0; run < RUNS; run++) {
        if (run % RUNS_PER_THREAD === 0) {
          threadId = randomUUID();
          paths = [];
          await openThread(page, threadId);
        }
        const path = `file-${run}.txt`;
        const plan = planOf(random);
        plans[plan.at]++;
        const where = `run ${run} (${JSON.stringify(plan)}); replay: ${replay}`;
        // The page is ready with the thread's history: every earlier run, each part once.
        await waitForChat(
          page,
          (state, count) => state.status === 'ready' && state.messages.length === count,
          paths.length * 2,
        );
        await page.getByRole('textbox', { name: 'Message' }).fill(`read ${path}`);
        await page.getByRole('button', { name: 'Send' }).click();
        if (plan.at === 'before-approval') {
          await page.waitForTimeout(plan.delayMs);
          await page.reload();
        }
        await approveIfAsked(page);
        if (plan.at === 'after-approval' || plan.at === 'mid-answer') {
          await page.waitForTimeout(plan.delayMs);
          await page.reload();
          // A reload that beat the approval's request to the server shows the card again.
          await approveIfAsked(page);
        }
        paths.push(path);
        await waitForChat(
          page,
          (state, text) =>
            state.status === 'ready' &&
            state.messages.at(-1)?.parts.some((part) => part.type === 'text' && part.text === text) === true,
          answerFor(path),
        ).catch(async (error: unknown) => {
          const shown = JSON.stringify(await chatState(page));
          const latest = await api.store.getLatestRun(threadId);
          throw new Error(
            `${where}: the answer never showed; the page has ${shown}; the thread's latest run is ${latest?.status} (${JSON.stringify(latest?.openTickets)})`,
            { cause: error },
          );
        });
        const state = (await chatState(page))!;
        expect(state.error, where).toBeNull();
        expect(state.pageErrors, where).toEqual([]);
        expect(
          state.messages.map((message) => ({ role: message.role, parts: partsOf(message) })),
          where,
        ).toEqual(expectedMessages(paths));
        // What the page rendered: one tool card and one text per answer.
        expect(await page.locator('[data-part="tool"][data-state="output-available"]').count(), where).toBe(
          paths.length,
        );
        expect(await page.locator('[data-role="assistant"] [data-part="text"]').count(), where).toBe(
          paths.length,
        );
      }
      expect(consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
    // Each approved call ran once.
    expect(api.reads).toEqual(Array.from({ length: RUNS }, (_, run) => `file-${run}.txt`));
    console.info(`useChat reload soak: ${RUNS} runs, seed ${SEED}, reloads ${JSON.stringify(plans)}`);
  }, 600_000);
});
