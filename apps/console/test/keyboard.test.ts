import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlCount, focusedName, tabTo, unlabeledControls } from './accessibility.js';
import { type AppProcess, serve, temporaryDir } from './assistant-server.js';
import { expectNoAxeViolations } from './axe.js';
import { openPage, screenshot, useChromium } from './browser.js';

describe('the console by keyboard alone, every control labelled', { timeout: 60_000 }, () => {
  const browser = useChromium();
  let dataDir: Awaited<ReturnType<typeof temporaryDir>>;
  let server: { app: AppProcess; url: string };

  beforeAll(async () => {
    dataDir = await temporaryDir();
    server = await serve(dataDir.path);
  });
  afterAll(async () => {
    await server?.app.stop();
    await dataDir?.remove();
  });

  it('starts a thread, chats, approves and opens the inbox with the keyboard only', async () => {
    const page = await openPage(browser());
    await page.goto(server.url);
    await page.getByRole('link', { name: 'New thread' }).waitFor();
    expect(await unlabeledControls(page)).toEqual([]);
    await expectNoAxeViolations(page, 'the home page');

    // The first Tab reaches the skip link.
    await page.keyboard.press('Tab');
    expect(await focusedName(page)).toBe('Skip to main content');
    await tabTo(page, /^New thread$/);
    await page.keyboard.press('Enter');
    await page.waitForURL(/#\/new$/);
    // The new thread's page puts focus in its message box.
    await expect.poll(() => focusedName(page)).toBe('Message');
    await page.keyboard.type('hello');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Approve' }).waitFor();
    await page.waitForURL(/#\/threads\//);
    // With a ticket open, the page has its most controls: none may lack a name.
    expect(await controlCount(page)).toBeGreaterThan(8);
    expect(await unlabeledControls(page)).toEqual([]);
    await expectNoAxeViolations(page, 'an open approval');
    // From the top of the page, two Tabs and Enter reach the message box (it took 14 Tabs before).
    await page.reload();
    await page.getByRole('button', { name: 'Approve' }).waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await focusedName(page)).toBe('Skip to the message box');
    await page.keyboard.press('Enter');
    expect(await focusedName(page)).toBe('Message');
    await tabTo(page, /^Approve$/);
    await screenshot(page, 'keyboard-focus');
    await page.keyboard.press('Enter');
    await page.getByText('Here is README.md:').waitFor();
    // Focus moved to the call the approval resumed, not to the top of the page.
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-call') ?? ''))
      .not.toBe('');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toContain('read_file');

    await tabTo(page, /^Inbox$/);
    await page.keyboard.press('Enter');
    await page.getByText('Nothing waits for a decision.').waitFor();
    // A route change moves focus to the new page's heading.
    await expect
      .poll(() =>
        page.evaluate(() => `${document.activeElement?.tagName} ${document.activeElement?.textContent}`),
      )
      .toBe('H2 Inbox');
    expect(await unlabeledControls(page)).toEqual([]);
    await expectNoAxeViolations(page, 'the inbox');
    await tabTo(page, /^Search threads$/);
    await page.keyboard.type('hello');
    await page.locator('nav.threads li a').first().waitFor();
    await expect(page.locator('nav.threads li a').count()).resolves.toBe(1);
    await page.context().close();
  });
});
