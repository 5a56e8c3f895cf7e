import type { Page } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Checkpoint, MessageRecord } from '../src/api-types.js';
import { focusedName } from './accessibility.js';
import { type AppProcess, serve, temporaryDir } from './assistant-server.js';
import { expectNoAxeViolations } from './axe.js';
import { openPage, screenshot, useChromium } from './browser.js';

const threadIdOf = (page: Page) => decodeURIComponent(/#\/threads\/([^/]+)/.exec(page.url())?.[1] ?? '');

/** What has focus: its id and its text. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const element = document.activeElement as HTMLElement | null;
    return { id: element?.id ?? '', text: element?.textContent?.trim() ?? '' };
  });

/** Waits until the page's run ended: Stop is disabled again (call it once the run was seen streaming). */
const runEnded = (page: Page) =>
  page.getByRole('button', { name: 'Stop' }).and(page.locator(':disabled')).waitFor();

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url);
  expect(response.status, url).toBe(200);
  return (await response.json()) as T;
}

/** A thread as the store holds it, through the HTTP API: its messages and its checkpoints. */
async function stored(url: string, threadId: string) {
  const path = `${url}/threads/${encodeURIComponent(threadId)}`;
  const [{ messages }, { checkpoints }, { latestRun }] = await Promise.all([
    getJson<{ messages: MessageRecord[] }>(`${path}/messages`),
    getJson<{ checkpoints: Checkpoint[] }>(`${path}/checkpoints`),
    getJson<{ latestRun: { runId: string; status: string } | null }>(path),
  ]);
  return {
    messages,
    checkpoints,
    latestRun,
    /** The checkpoints without `at` (a fork's copies are committed when it is made). */
    steps: checkpoints.map(({ at: _at, ...step }) => step),
  };
}

async function sendMessage(page: Page, text: string, answer: string): Promise<void> {
  await page.getByLabel('Message', { exact: true }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
  await page.getByText(answer).waitFor();
  await runEnded(page);
}

describe('time travel in the console: a thread’s history, and a fork from any step', {
  timeout: 120_000,
}, () => {
  const browser = useChromium();
  let dataDir: Awaited<ReturnType<typeof temporaryDir>>;
  const processes: AppProcess[] = [];

  beforeEach(async () => {
    dataDir = await temporaryDir();
  });
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((app) => app.stop()));
    await dataDir?.remove();
  });

  it('forks at step k: the new thread opens with the first k steps of the original, its next run continues from there, the original is unchanged', async () => {
    const server = await serve(dataDir.path);
    processes.push(server.app);
    const page = await openPage(browser());
    await page.goto(server.url);
    await page.getByRole('link', { name: 'New thread' }).click();
    await sendMessage(page, 'what is 2 + 2', '2 + 2 = 4.');
    const originalId = threadIdOf(page);
    await sendMessage(page, 'what is 3 * 3', '3 * 3 = 9.');
    const before = await stored(server.url, originalId);
    // Two runs of two steps each (a calculator call, then the answer): four checkpoints.
    expect(before.steps.map((step) => [step.checkpoint, step.step, step.input ?? null])).toEqual([
      [1, 1, 'what is 2 + 2'],
      [2, 2, null],
      [3, 1, 'what is 3 * 3'],
      [4, 2, null],
    ]);

    // The history: one entry per step, each with "Fork from here"; focus on its heading.
    await page.getByRole('link', { name: 'History and forks' }).click();
    await page.getByRole('heading', { level: 2, name: 'History of “what is 2 + 2”' }).waitFor();
    await expect.poll(() => focused(page).then((element) => element.id)).toBe('history-title');
    const steps = page.getByRole('list', { name: 'Steps' }).locator(':scope > li');
    await expect.poll(() => steps.count()).toBe(4);
    await expect(steps.locator('h3').allTextContents()).resolves.toEqual([
      'Step 1',
      'Step 2',
      'Step 3',
      'Step 4',
    ]);
    await expect(steps.nth(1).textContent()).resolves.toContain('2 + 2 = 4.');
    await expect(
      steps.nth(0).getByRole('list', { name: 'Tool calls of step 1' }).textContent(),
    ).resolves.toBe('calculator has its result');
    await expect(page.getByRole('button', { name: /^Fork from here/ }).count()).resolves.toBe(4);
    await screenshot(page, 'history');
    await expectNoAxeViolations(page, "a thread's history");

    // By keyboard: the form opens with focus in its field; Escape closes it, focus back on its button.
    await page.getByRole('button', { name: 'Fork from here (step 1)' }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => focused(page).then((element) => element.id)).toBe('fork-input-1');
    await page.keyboard.press('Escape');
    await expect.poll(() => focused(page).then((element) => element.id)).toBe('fork-button-1');

    // Fork at step k = 2 (the end of the first run), without a message.
    const k = 2;
    await page.getByRole('button', { name: `Fork from here (step ${k})` }).click();
    const form = page.getByRole('form', { name: `Fork from step ${k}` });
    await expect.poll(() => focusedName(page)).toBe('Next message (optional)');
    await expect(form.getByText(`The new thread keeps steps 1 to ${k}.`).count()).resolves.toBe(1);
    await screenshot(page, 'fork-form');
    await expectNoAxeViolations(page, 'a fork form');
    await form.getByRole('button', { name: 'Fork', exact: true }).click();

    // The new thread opens, focus on its heading, and says where it came from.
    await page.waitForURL((url) => /#\/threads\/[^/]+$/.test(url.hash) && !url.hash.includes(originalId));
    const forkId = threadIdOf(page);
    const title = `what is 2 + 2 (fork from step ${k})`;
    await page.getByRole('heading', { level: 2, name: title }).waitFor();
    await expect.poll(() => focused(page)).toEqual({ id: 'chat-title', text: title });
    await page.getByText('Forked from “what is 2 + 2” at step 2').waitFor();
    await expect(page.locator('.entry-user').allTextContents()).resolves.toEqual(['You what is 2 + 2']);
    await expectNoAxeViolations(page, 'a forked thread');

    // Its first k steps are the original's: the same stored messages, the same checkpoints.
    const forked = await stored(server.url, forkId);
    const copied = before.checkpoints[k - 1]!.messageCount;
    expect(forked.messages.map((record) => record.message)).toEqual(
      before.messages.slice(0, copied).map((record) => record.message),
    );
    expect(forked.steps).toEqual(before.steps.slice(0, k));
    expect(forked.latestRun).toBeNull();

    // Its next run continues from there: a message in the fork, answered, committed after the copied steps.
    await sendMessage(page, 'what is 5 + 5', '5 + 5 = 10.');
    const continued = await stored(server.url, forkId);
    expect(continued.latestRun?.status).toBe('done');
    expect(continued.steps.slice(0, k)).toEqual(before.steps.slice(0, k));
    expect(continued.steps.slice(k).map((step) => [step.runId, step.step, step.input ?? null])).toEqual([
      [continued.latestRun!.runId, 1, 'what is 5 + 5'],
      [continued.latestRun!.runId, 2, null],
    ]);
    expect(continued.messages.slice(0, copied).map((record) => record.message)).toEqual(
      before.messages.slice(0, copied).map((record) => record.message),
    );
    expect(continued.messages.at(-1)?.message.content).toEqual([{ type: 'text', text: '5 + 5 = 10.' }]);
    await screenshot(page, 'forked-thread');

    // The original is unchanged: its messages, its checkpoints, its latest run.
    expect(await stored(server.url, originalId)).toEqual(before);
    await page.getByRole('link', { name: '“what is 2 + 2”' }).click();
    await page.getByText('3 * 3 = 9.').waitFor();
    await expect(page.getByText('5 + 5 = 10.').count()).resolves.toBe(0);
    await page.context().close();
  });

  it('edits the message of a step and forks from before it: the new thread runs the edited message at once', async () => {
    const server = await serve(dataDir.path);
    processes.push(server.app);
    const page = await openPage(browser());
    await page.goto(server.url);
    await page.getByRole('link', { name: 'New thread' }).click();
    await sendMessage(page, 'what is 2 + 2', '2 + 2 = 4.');
    const originalId = threadIdOf(page);
    await sendMessage(page, 'what is 3 * 3', '3 * 3 = 9.');
    const before = await stored(server.url, originalId);

    await page.goto(`${server.url}/#/threads/${encodeURIComponent(originalId)}/history`);
    await page.getByRole('button', { name: 'Edit message of step 3 and fork' }).click();
    const form = page.getByRole('form', { name: 'Edit the message of step 3 and fork' });
    const field = form.getByLabel('Message');
    await expect.poll(() => focused(page).then((element) => element.id)).toBe('fork-input-3');
    await expect(field.inputValue()).resolves.toBe('what is 3 * 3');
    await field.fill('what is 6 * 7');
    await expectNoAxeViolations(page, 'editing the message of a step');
    await form.getByRole('button', { name: 'Fork with this message' }).click();

    await page.waitForURL((url) => /#\/threads\/[^/]+$/.test(url.hash) && !url.hash.includes(originalId));
    const forkId = threadIdOf(page);
    await page.getByText('6 * 7 = 42.').waitFor();
    await runEnded(page);
    await expect(page.locator('.entry-user').allTextContents()).resolves.toEqual([
      'You what is 2 + 2',
      'You what is 6 * 7',
    ]);
    // The run streamed into the page shows once (not again from the store after it ended).
    await expect(page.getByText('6 * 7 = 42.').count()).resolves.toBe(1);
    const forked = await stored(server.url, forkId);
    // Steps 1 and 2 are the original's; the edited message's run follows them.
    expect(forked.steps.slice(0, 2)).toEqual(before.steps.slice(0, 2));
    expect(forked.steps.slice(2).map((step) => [step.step, step.input ?? null, step.text])).toEqual([
      [1, 'what is 6 * 7', 'Let me calculate 6 * 7. '],
      [2, null, '6 * 7 = 42.'],
    ]);
    expect(await stored(server.url, originalId)).toEqual(before);
    await page.context().close();
  });

  it('answers again from a step without a new message (continue): the fork’s run continues the step’s run', async () => {
    const server = await serve(dataDir.path);
    processes.push(server.app);
    const page = await openPage(browser());
    await page.goto(server.url);
    await page.getByRole('link', { name: 'New thread' }).click();
    await sendMessage(page, 'what is 2 + 2', '2 + 2 = 4.');
    const originalId = threadIdOf(page);
    const before = await stored(server.url, originalId);

    await page.goto(`${server.url}/#/threads/${encodeURIComponent(originalId)}/history`);
    await page.getByRole('button', { name: 'Fork from here (step 1)' }).click();
    const form = page.getByRole('form', { name: 'Fork from step 1' });
    await form.getByLabel(/^Answer again from this step/).check();
    await expect(form.getByLabel('Next message (optional)').isDisabled()).resolves.toBe(true);
    await form.getByRole('button', { name: 'Fork', exact: true }).click();
    await page.waitForURL((url) => /#\/threads\/[^/]+$/.test(url.hash) && !url.hash.includes(originalId));
    const forkId = threadIdOf(page);
    await page.getByText('2 + 2 = 4.').waitFor();
    await runEnded(page);
    await expect(page.getByText('2 + 2 = 4.').count()).resolves.toBe(1);
    await expect.poll(async () => (await stored(server.url, forkId)).latestRun?.status).toBe('done');
    const forked = await stored(server.url, forkId);
    // Step 1 copied; step 2 answered again, by the fork's own run (its step 2: it continued step 1's run).
    expect(forked.steps[0]).toEqual(before.steps[0]);
    expect(forked.steps.slice(1).map((step) => [step.runId, step.step, step.text])).toEqual([
      [forked.latestRun!.runId, 2, '2 + 2 = 4.'],
    ]);
    expect(forked.latestRun!.runId).not.toBe(before.latestRun!.runId);
    expect(await stored(server.url, originalId)).toEqual(before);
    await page.context().close();
  });

  it("runs a waiting step's open call again only when asked: the fork asks for its approval again, the original still waits", async () => {
    const server = await serve(dataDir.path);
    processes.push(server.app);
    const page = await openPage(browser());
    await page.goto(server.url);
    await page.getByRole('link', { name: 'New thread' }).click();
    await page.getByLabel('Message', { exact: true }).fill('read README.md');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('button', { name: 'Approve' }).waitFor();
    const originalId = threadIdOf(page);
    await expect.poll(async () => (await stored(server.url, originalId)).latestRun?.status).toBe('waiting');
    const before = await stored(server.url, originalId);

    await page.getByRole('link', { name: 'History and forks' }).click();
    const step = page.getByRole('list', { name: 'Steps' }).locator(':scope > li').first();
    await expect(step.getByRole('list', { name: 'Tool calls of step 1' }).textContent()).resolves.toBe(
      'read_file no result yet',
    );
    await step.getByText('This step waited').waitFor();
    await step.getByRole('button', { name: 'Fork from here (step 1)' }).click();
    const form = page.getByRole('form', { name: 'Fork from step 1' });
    // Running the open calls again is offered only when answering again (it continues the step's run).
    await expect(form.getByLabel(/^Run this step's open calls again/).count()).resolves.toBe(0);
    await form.getByLabel(/^Answer again from this step/).check();
    await form.getByLabel(/^Run this step's open calls again/).check();
    await expectNoAxeViolations(page, "a waiting step's fork form");
    await form.getByRole('button', { name: 'Fork', exact: true }).click();

    await page.waitForURL((url) => /#\/threads\/[^/]+$/.test(url.hash) && !url.hash.includes(originalId));
    const forkId = threadIdOf(page);
    // The call goes through the gate again, in the fork: its approval is asked there.
    const approve = page.getByRole('button', { name: 'Approve' });
    await approve.waitFor();
    await approve.click();
    await page.getByText('Here is README.md:').waitFor();
    await runEnded(page);
    const forked = await stored(server.url, forkId);
    expect(forked.latestRun?.status).toBe('done');
    const results = forked.messages
      .filter((record) => record.message.role === 'tool')
      .flatMap((record) => record.message.content as Array<{ toolName: string; result: { status: string } }>);
    expect(results.map((part) => [part.toolName, part.result.status])).toEqual([['read_file', 'success']]);
    // The original still waits for its own approval, unchanged.
    expect(await stored(server.url, originalId)).toEqual(before);
    await page.context().close();
  });

  it('fits a 360 px phone: the history and its fork form, nothing scrolls sideways', async () => {
    const server = await serve(dataDir.path);
    processes.push(server.app);
    const context = await browser().newContext({
      viewport: { width: 360, height: 740 },
      reducedMotion: 'reduce',
      isMobile: true,
      hasTouch: true,
    });
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    const noSidewaysScroll = () =>
      page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);
    await page.goto(server.url);
    await page.getByRole('link', { name: 'New thread' }).click();
    await sendMessage(page, 'what is 12 * (3 + 4)', '12 * (3 + 4) = 84.');
    await page.getByRole('link', { name: 'History and forks' }).click();
    await page.getByRole('list', { name: 'Steps' }).waitFor();
    await page.getByRole('button', { name: 'Edit message of step 1 and fork' }).click();
    await page.getByRole('form', { name: 'Edit the message of step 1 and fork' }).waitFor();
    const width = await page.locator('section.history').evaluate((element) => element.clientWidth);
    expect(width).toBeGreaterThanOrEqual(320);
    expect(await noSidewaysScroll()).toBe(true);
    await screenshot(page, 'phone-history');
    await expectNoAxeViolations(page, 'a fork form on a phone');
    await context.close();
  });
});
