import type { Page } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type AppProcess, serve, temporaryDir } from './assistant-server.js';
import { openPage, screenshot, useChromium } from './browser.js';
import { CuttableProxy } from './cuttable-proxy.js';
import { expectWholeRun, RECORD_EVENTS, RECORD_STATUS, statusTexts } from './page-recorders.js';

const threadIdOf = (page: Page) => decodeURIComponent(/#\/threads\/([^/]+)/.exec(page.url())?.[1] ?? '');

describe('the console in Chromium against the sample server on a SQLite file', { timeout: 60_000 }, () => {
  const browser = useChromium();
  let dataDir: Awaited<ReturnType<typeof temporaryDir>>;
  let server: { app: AppProcess; url: string; port: number };

  beforeEach(async () => {
    dataDir = await temporaryDir();
    server = await serve(dataDir.path);
  });
  afterEach(async () => {
    await server?.app.stop();
    await dataDir?.remove();
  });

  it('chats with streamed text and tool calls, asks for an approval, lists it in the inbox, and resumes', async () => {
    const page = await openPage(browser());
    await page.addInitScript(RECORD_STATUS);
    await page.goto(server.url);
    await page.getByRole('link', { name: 'New thread' }).click();
    await page.getByLabel('Message').fill('hello');
    await page.getByLabel('Message').press('Enter');

    const approve = page.getByRole('button', { name: 'Approve' });
    await approve.waitFor();
    const calculator = page.locator('.tool').filter({ hasText: 'calculator' });
    await expect(calculator.locator('pre.arguments').textContent()).resolves.toContain(
      '"expression": "(2 + 3) * 7"',
    );
    // The tool's result is shown as data: a key/value list, not a JSON string.
    await expect(calculator.locator('dl.data dt').allTextContents()).resolves.toEqual([
      'expression',
      'result',
    ]);
    await expect(calculator.locator('dl.data dd').nth(1).textContent()).resolves.toBe('35');
    const ticket = page.getByRole('region', { name: /Approval needed/ });
    await expect(ticket.textContent()).resolves.toContain(
      'The assistant wants to read a file in the sandbox.',
    );
    await expect(page.getByRole('button', { name: 'Always allow read_file' }).isVisible()).resolves.toBe(
      true,
    );
    await expect(page.getByRole('button', { name: 'Deny' }).isVisible()).resolves.toBe(true);
    const statuses = await statusTexts(page);
    expect(statuses).toContain('Thinking…');
    await screenshot(page, 'approval');

    const threadId = threadIdOf(page);
    await page.getByRole('link', { name: 'Inbox' }).click();
    const inboxEntry = page.locator('.inbox-list > li');
    await inboxEntry.first().waitFor();
    await expect(inboxEntry.count()).resolves.toBe(1);
    await expect(inboxEntry.first().textContent()).resolves.toContain('read_file');
    await screenshot(page, 'inbox');
    // Approving from the inbox opens the thread and streams the resumed run there.
    await inboxEntry.first().getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(`**/#/threads/${encodeURIComponent(threadId)}`);

    await page.getByText("# The assistant's sandbox").first().waitFor();
    await page.getByRole('button', { name: 'Send' }).and(page.locator(':disabled')).waitFor();
    await page.getByLabel('Message').fill('what is 6 * 7');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('6 * 7 = 42.').waitFor();
    await expect(page.getByRole('button', { name: 'Approve' }).count()).resolves.toBe(0);
    await screenshot(page, 'chat');

    // A reload shows the same conversation from the store, each message once.
    await page.reload();
    await page.getByText('6 * 7 = 42.').waitFor();
    await expect(page.getByText('Here is README.md:').count()).resolves.toBe(1);
    await expect(page.locator('.entry-user').allTextContents()).resolves.toEqual([
      'You hello',
      'You what is 6 * 7',
    ]);
    await page.context().close();
  });

  it('answers a tool that asks the user from a form drawn from its response schema', async () => {
    const page = await openPage(browser());
    await page.goto(server.url);
    await page.getByRole('link', { name: 'New thread' }).click();
    await page
      .getByLabel('Message')
      .fill('call ask_user {"question":"Which city?","choices":["Paris","Tokyo"]}');
    await page.getByRole('button', { name: 'Send' }).click();
    const form = page.getByRole('form', { name: 'Answer for ask_user' });
    await form.waitFor();
    await expect(page.getByRole('region', { name: /Input needed/ }).textContent()).resolves.toContain(
      'Which city?',
    );
    await form.getByLabel('Which city?').selectOption('Tokyo');
    await screenshot(page, 'input-form');
    await form.getByRole('button', { name: 'Send answer' }).click();
    await page.getByText('The tool "ask_user" answered: {"answer":"Tokyo"}.').waitFor();
    await expect(page.getByRole('form', { name: 'Answer for ask_user' }).count()).resolves.toBe(0);

    // The same ticket answered from the inbox shows the same form (the inbox carries the response schema).
    await page
      .getByLabel('Message')
      .fill('call ask_user {"question":"Which sea?","choices":["Baltic","Coral"]}');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('form', { name: 'Answer for ask_user' }).waitFor();
    const threadId = threadIdOf(page);
    await page.getByRole('link', { name: 'Inbox' }).click();
    const inboxForm = page.locator('.inbox-list').getByRole('form', { name: 'Answer for ask_user' });
    await inboxForm.waitFor();
    await expect(page.locator('.inbox-list textarea').count()).resolves.toBe(0);
    await inboxForm.getByLabel('Which sea?').selectOption('Coral');
    await screenshot(page, 'inbox-input-form');
    await inboxForm.getByRole('button', { name: 'Send answer' }).click();
    await page.waitForURL(`**/#/threads/${encodeURIComponent(threadId)}`);
    await page.getByText('The tool "ask_user" answered: {"answer":"Coral"}.').waitFor();
    await expect(page.getByRole('form', { name: 'Answer for ask_user' }).count()).resolves.toBe(0);
    await page.context().close();
  });

  it('stops a run with Stop (a cancel), while closing the tab only detaches and the run goes on', async () => {
    const page = await openPage(browser());
    await page.goto(server.url);
    await page.getByRole('link', { name: 'New thread' }).click();
    await page.getByLabel('Message').fill('run the slow task with 8 steps');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('progressbar', { name: 'Progress of slow_task' }).waitFor();
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByText('Stopped.').waitFor();
    const stopped = (await (await fetch(`${server.url}/threads/${threadIdOf(page)}`)).json()) as {
      latestRun: { status: string; termination: { type: string } };
    };
    expect(stopped.latestRun.termination.type).toBe('cancelled');

    await page.getByLabel('Message').fill('run the slow task with 3 steps');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('progressbar', { name: 'Progress of slow_task' }).waitFor();
    const threadId = threadIdOf(page);
    await page.context().close();

    const deadline = Date.now() + 20_000;
    let latest: { status: string; termination: { type: string } | null } | undefined;
    while (Date.now() < deadline) {
      latest = (
        (await (await fetch(`${server.url}/threads/${threadId}`)).json()) as { latestRun: typeof latest }
      ).latestRun;
      if (latest?.status === 'done') break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(latest).toMatchObject({ status: 'done', termination: { type: 'natural-end' } });
    const messages = (await (await fetch(`${server.url}/threads/${threadId}/messages`)).json()) as {
      messages: Array<{ message: { role: string; content: Array<{ text?: string }> } }>;
    };
    const last = messages.messages.at(-1)?.message;
    expect(last?.content[0]?.text).toBe('The slow task is done: All 3 steps finished.');
  });

  it("reconnects after the network drops: the server replays the run's log after Last-Event-ID", async () => {
    const { proxy, url } = await CuttableProxy.start(server.port);
    try {
      const page = await openPage(browser());
      await page.addInitScript(RECORD_EVENTS);
      await page.goto(url);
      await page.getByRole('link', { name: 'New thread' }).click();
      await page.getByLabel('Message').fill('run the slow task with 6 steps');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.getByRole('progressbar', { name: 'Progress of slow_task' }).waitFor();
      proxy.cut({ refuse: true });
      await page.getByRole('status').filter({ hasText: 'Connection lost; reconnecting' }).waitFor();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      proxy.restore();
      await page.getByText('The slow task is done: All 6 steps finished.').waitFor({ timeout: 20_000 });
      await expectWholeRun(page);
      await page.context().close();
    } finally {
      await proxy.close();
    }
  });
});
