import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type AppProcess, serve, temporaryDir } from './assistant-server.js';
import { expectNoAxeViolations } from './axe.js';
import { openPage, screenshot, useChromium } from './browser.js';
import { CuttableProxy } from './cuttable-proxy.js';

const threadIdOf = (page: Page) => decodeURIComponent(/#\/threads\/([^/]+)/.exec(page.url())?.[1] ?? '');

/** What has focus: its id, its `data-call` (a tool call's entry) and its text. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const element = document.activeElement as HTMLElement | null;
    return {
      id: element?.id ?? '',
      call: element?.getAttribute('data-call') ?? '',
      text: element?.textContent?.trim() ?? '',
    };
  });

/** Waits until the page's run ended: Stop is disabled again (call it once the run was seen streaming). */
const runEnded = (page: Page) =>
  page.getByRole('button', { name: 'Stop' }).and(page.locator(':disabled')).waitFor();

async function threadsOnServer(url: string): Promise<Array<{ id: string; metadata: { title?: string } }>> {
  return ((await (await fetch(`${url}/threads?limit=100`)).json()) as { threads: [] }).threads;
}

describe('the console as a workbench: titles, runs, resent approvals, Markdown, phones', {
  timeout: 90_000,
}, () => {
  const browser = useChromium();
  let dataDir: Awaited<ReturnType<typeof temporaryDir>>;
  const processes: AppProcess[] = [];
  let proxy: CuttableProxy | undefined;

  beforeEach(async () => {
    dataDir = await temporaryDir();
  });
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
    await Promise.all(processes.splice(0).map((app) => app.stop()));
    await dataDir?.remove();
  });

  async function start(): Promise<{ url: string; port: number; app: AppProcess }> {
    const server = await serve(dataDir.path);
    processes.push(server.app);
    return server;
  }

  it('creates a thread only with its first message, titles it after it, renames it and labels each run', async () => {
    const server = await start();
    const page = await openPage(browser());
    const failed: string[] = [];
    page.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
    });
    await page.goto(server.url);
    for (let click = 0; click < 3; click++) {
      await page.getByRole('link', { name: 'New thread' }).click();
      await page.waitForURL(/#\/new$/);
      await page.goto(`${server.url}/#/`);
    }
    await page.getByRole('link', { name: 'New thread' }).click();
    await page.waitForURL(/#\/new$/);
    // Three clicks and a fourth: no thread on the server until a message is sent.
    expect(await threadsOnServer(server.url)).toEqual([]);
    await expect.poll(() => focused(page).then((element) => element.id)).toBe('message');
    await expectNoAxeViolations(page, 'a new thread');

    await page.keyboard.type('what is 2 + 2');
    await page.keyboard.press('Enter');
    await page.getByText('2 + 2 = 4.').waitFor();
    const threadId = threadIdOf(page);
    expect(threadId).not.toBe('');
    const heading = page.getByRole('heading', { level: 2 });
    await expect(heading.textContent()).resolves.toBe('what is 2 + 2');
    expect(await threadsOnServer(server.url)).toMatchObject([
      { id: threadId, metadata: { title: 'what is 2 + 2' } },
    ]);
    await expect(page.locator('nav.threads li a .thread-title').allTextContents()).resolves.toEqual([
      'what is 2 + 2',
    ]);
    // Focus followed the new thread's message box into its chat.
    expect((await focused(page)).id).toBe('message');

    await page.getByRole('button', { name: 'Rename thread what is 2 + 2' }).click();
    await expect.poll(() => focused(page).then((element) => element.id)).toBe('thread-title');
    await expectNoAxeViolations(page, 'renaming a thread');
    await page.getByLabel('Thread title').fill('Arithmetic');
    await page.getByLabel('Thread title').press('Enter');
    await page.getByRole('heading', { level: 2, name: 'Arithmetic' }).waitFor();
    await expect.poll(() => focused(page).then((element) => element.id)).toBe('chat-title');
    await page.locator('nav.threads li a .thread-title', { hasText: 'Arithmetic' }).waitFor();
    expect((await threadsOnServer(server.url))[0]?.metadata.title).toBe('Arithmetic');
    await screenshot(page, 'thread-title');

    await page.getByLabel('Message').fill('what is 3 * 3');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('3 * 3 = 9.').waitFor();
    await page.getByText('Run timelines (2)').click();
    const links = page.getByRole('link', { name: /^Timeline of run/ });
    const labels = await links.allTextContents();
    expect(labels).toHaveLength(2);
    expect(labels[0]).toMatch(/^Timeline of run 1, started .+ \(done, 2 steps\)$/);
    expect(labels[1]).toMatch(/^Timeline of run 2, started .+ \(done, 2 steps\)$/);
    const runIds = (
      (await (await fetch(`${server.url}/threads/${threadId}/runs`)).json()) as {
        runs: Array<{ runId: string }>;
      }
    ).runs.map((run) => run.runId);
    // The old labels were the ids' first 8 characters, the same for both runs of this process.
    expect(runIds[0]!.slice(0, 8)).toBe(runIds[1]!.slice(0, 8));
    for (const label of labels) expect(label).not.toContain(runIds[0]!.slice(0, 8));
    expect(await heading.textContent()).not.toContain(threadId);

    await links.nth(1).click();
    const timelineHeading = page.getByRole('heading', { level: 2, name: /^Timeline of run 2, started/ });
    await timelineHeading.waitFor();
    // A route change moves focus to the new page's heading.
    await expect.poll(() => focused(page).then((element) => element.id)).toBe('timeline-title');
    await page.getByRole('list', { name: 'Timeline entries' }).waitFor();
    await expectNoAxeViolations(page, 'a run timeline');
    await page.getByRole('link', { name: 'Back to the thread' }).click();
    await expect.poll(() => focused(page).then((element) => element.text)).toBe('Arithmetic');

    // The page and its icon answered; nothing 404ed (the icon did, before).
    const icon = await fetch(`${server.url}/favicon.ico`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/x-icon');
    expect(failed).toEqual([]);
    await page.context().close();
  });

  it('keeps an approval that could not be sent on screen and sends it once the server is back', async () => {
    const first = await start();
    const started = await CuttableProxy.start(first.port);
    proxy = started.proxy;
    const page = await openPage(browser());
    await page.goto(started.url);
    await page.getByRole('link', { name: 'New thread' }).click();
    await page.getByLabel('Message').fill('hello');
    await page.getByLabel('Message').press('Enter');
    const approve = page.getByRole('button', { name: 'Approve' });
    await approve.waitFor();
    const threadId = threadIdOf(page);

    first.app.child.kill('SIGKILL');
    await first.app.exited;
    await approve.click();
    const ticket = page.getByRole('region', { name: /Approval needed/ });
    await ticket.getByText('Not sent yet:').waitFor();
    // The card stays, its buttons wait, and it is not sent elsewhere meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await expect(ticket.count()).resolves.toBe(1);
    await expect(ticket.getByRole('button', { name: 'Approve' }).isDisabled()).resolves.toBe(true);
    await expect(ticket.textContent()).resolves.toContain('read_file');
    await screenshot(page, 'approval-not-sent');
    await expectNoAxeViolations(page, 'an approval not sent yet');
    // "Don't send it" drops the decision: the ticket can be answered again (and is, here).
    await ticket.getByRole('button', { name: "Don't send it" }).click();
    await expect(ticket.getByText('Not sent yet:').count()).resolves.toBe(0);
    await expect(ticket.getByRole('button', { name: 'Approve' }).isEnabled()).resolves.toBe(true);
    await ticket.getByRole('button', { name: 'Approve' }).click();
    await ticket.getByText('Not sent yet:').waitFor();

    const second = await start();
    proxy.retarget(second.port);
    await page.getByText('Here is README.md:').waitFor({ timeout: 30_000 });
    await expect(page.getByRole('region', { name: /Approval needed/ }).count()).resolves.toBe(0);
    await runEnded(page);
    // Focus moved to the call the decision resumed, and stayed there through the reload.
    const where = await focused(page);
    expect(where.call).not.toBe('');
    expect(where.text).toContain('read_file');

    // Applied once: the run ended, with one result for the approved call.
    await expect
      .poll(
        async () => {
          const thread = (await (await fetch(`${second.url}/threads/${threadId}`)).json()) as {
            latestRun: { status: string; termination: { type: string } | null };
          };
          return thread.latestRun;
        },
        { timeout: 10_000 },
      )
      .toMatchObject({ status: 'done', termination: { type: 'natural-end' } });
    const messages = (await (await fetch(`${second.url}/threads/${threadId}/messages`)).json()) as {
      messages: Array<{ message: { role: string; content: Array<{ toolName?: string }> } }>;
    };
    const readResults = messages.messages
      .filter(({ message }) => message.role === 'tool')
      .flatMap(({ message }) => message.content)
      .filter((part) => part.toolName === 'read_file');
    expect(readResults).toHaveLength(1);
    await page.context().close();
  });

  it('renders Markdown from the model, sanitised: no raw HTML, scripts, handlers or javascript: links', async () => {
    const server = await start();
    await mkdir(join(dataDir.path, 'sandbox'), { recursive: true });
    await writeFile(
      join(dataDir.path, 'sandbox', 'notes.md'),
      [
        '# Notes',
        '',
        'Some **bold** and *italic* text with `inline code`.',
        '',
        '- first item',
        '- second item',
        '',
        '| city | sea |',
        '| --- | --- |',
        '| Tokyo | Pacific |',
        '',
        '```',
        'const answer = 42;',
        '```',
        '',
        '[the docs](https://example.com/docs) and [a trap](javascript:window.__pwned=1)',
        '',
        '<img src=x onerror="window.__pwned=2"> <script>window.__pwned=3</script> <b>raw</b>',
        '',
        '![a pixel](https://example.com/pixel.png)',
      ].join('\n'),
    );
    const page = await openPage(browser());
    await page.goto(server.url);
    await page.getByRole('link', { name: 'New thread' }).click();
    await page.getByLabel('Message').fill('read notes.md');
    await page.getByLabel('Message').press('Enter');
    await page.getByRole('button', { name: 'Approve' }).click();
    const markdown = page.locator('.entry-assistant .markdown').filter({ hasText: 'Here is notes.md:' });
    await markdown.locator('table').waitFor();
    await runEnded(page);

    const check = async (state: string) => {
      await expect(markdown.locator('h3').textContent(), state).resolves.toBe('Notes');
      await expect(markdown.locator('strong').textContent()).resolves.toBe('bold');
      await expect(markdown.locator('em').textContent()).resolves.toBe('italic');
      await expect(markdown.locator('li').allTextContents()).resolves.toEqual(['first item', 'second item']);
      await expect(markdown.locator('td').allTextContents()).resolves.toEqual(['Tokyo', 'Pacific']);
      await expect(markdown.locator('pre code').textContent()).resolves.toBe('const answer = 42;\n');
      const docs = markdown.getByRole('link', { name: 'the docs' });
      await expect(docs.getAttribute('href')).resolves.toBe('https://example.com/docs');
      await expect(docs.getAttribute('rel')).resolves.toBe('noopener noreferrer nofollow');
      // The javascript: link keeps its text and loses its address.
      await expect(
        markdown.getByText('a trap').evaluate((element) => element.getAttribute('href')),
      ).resolves.toBe(null);
      // Raw HTML is text: no element made from it, no handler ran.
      await expect(markdown.textContent()).resolves.toContain('<b>raw</b>');
      await expect(markdown.textContent()).resolves.toContain('<script>window.__pwned=3</script>');
      await expect(markdown.locator('img, script, b, [onerror]').count()).resolves.toBe(0);
      // An image is a link to it: the page loads nothing from elsewhere.
      await expect(markdown.getByRole('link', { name: 'a pixel' }).getAttribute('href')).resolves.toBe(
        'https://example.com/pixel.png',
      );
      await expect(page.evaluate(() => (window as { __pwned?: number }).__pwned)).resolves.toBeUndefined();
    };
    await check('streamed');
    await expect(page.locator('.entry-user').allTextContents()).resolves.toEqual(['You read notes.md']);
    await screenshot(page, 'markdown');
    await expectNoAxeViolations(page, 'Markdown in the chat');
    await page.reload();
    await markdown.locator('table').waitFor();
    await check('reloaded');
    await page.context().close();
  });

  it('shows a stopped call as stopped (not failed), and the arguments of ask_user once', async () => {
    const server = await start();
    const page = await openPage(browser());
    await page.goto(server.url);
    await page.getByRole('link', { name: 'New thread' }).click();
    await page.getByLabel('Message').fill('run the slow task with 8 steps');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('progressbar', { name: 'Progress of slow_task' }).waitFor();
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByText('Stopped.').waitFor();
    const slow = page.locator('.tool').filter({ hasText: 'slow_task' });
    const expectStopped = async () => {
      await expect(slow.locator('.tool-head .badge').first().textContent()).resolves.toBe('stopped');
      await expect(slow.getAttribute('class')).resolves.toContain('tool-stopped');
      await expect(page.locator('.tool-error').count()).resolves.toBe(0);
      await expect(page.getByText('failed', { exact: true }).count()).resolves.toBe(0);
    };
    await expectStopped();
    await page.reload();
    await page.getByText('Stopped.').waitFor();
    await expectStopped();

    await page
      .getByLabel('Message')
      .fill('call ask_user {"question":"Which city?","choices":["Paris","Tokyo"]}');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('form', { name: 'Answer for ask_user' }).waitFor();
    await expect(page.locator('pre').filter({ hasText: 'Which city?' }).count()).resolves.toBe(1);
    await expect(
      page
        .getByRole('region', { name: /Input needed/ })
        .locator('pre.arguments')
        .count(),
    ).resolves.toBe(0);
    await expectNoAxeViolations(page, 'a stopped call and a question');
    await page.context().close();
  });

  it('fits a 360 px phone: the chat takes the width, nothing scrolls sideways, threads are the home page', async () => {
    const server = await start();
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
    await page.getByLabel('Message').fill('hello');
    await page.getByLabel('Message').press('Enter');
    await page.getByRole('button', { name: 'Approve' }).waitFor();
    const chatWidth = await page.locator('section.chat').evaluate((element) => element.clientWidth);
    expect(chatWidth).toBeGreaterThanOrEqual(320);
    expect(await noSidewaysScroll()).toBe(true);
    await expect(page.locator('aside').isVisible()).resolves.toBe(false);
    await screenshot(page, 'phone-approval');
    await expectNoAxeViolations(page, 'an approval on a phone');

    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Here is README.md:').waitFor();
    await runEnded(page);
    expect(await noSidewaysScroll()).toBe(true);
    await page.getByText(/Run timelines/).click();
    await page.getByRole('link', { name: /^Timeline of run 1/ }).click();
    await page.getByRole('list', { name: 'Timeline entries' }).waitFor();
    expect(await noSidewaysScroll()).toBe(true);
    await expectNoAxeViolations(page, 'a timeline on a phone');

    await page.getByRole('link', { name: 'Threads', exact: true }).click();
    await page.locator('nav.threads li a').first().waitFor();
    await expect(page.locator('aside').isVisible()).resolves.toBe(true);
    expect(await noSidewaysScroll()).toBe(true);
    await screenshot(page, 'phone-threads');
    await context.close();
  });
});
