import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlCount, tabTo, unlabeledControls } from './accessibility.js';
import { type AppProcess, serve, temporaryDir } from './assistant-server.js';
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
    await page.getByRole('button', { name: 'New thread' }).waitFor();
    expect(await unlabeledControls(page)).toEqual([]);

    await tabTo(page, /^New thread$/);
    await page.keyboard.press('Enter');
    await page.waitForURL(/#\/threads\//);
    await tabTo(page, /^Message$/);
    await page.keyboard.type('hello');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Approve' }).waitFor();
    // With a ticket open, the page has its most controls: none may lack a name.
    expect(await controlCount(page)).toBeGreaterThan(8);
    expect(await unlabeledControls(page)).toEqual([]);
    await tabTo(page, /^Approve$/);
    await screenshot(page, 'keyboard-focus');
    await page.keyboard.press('Enter');
    await page.getByText('Here is README.md:').waitFor();

    await tabTo(page, /^Inbox$/);
    await page.keyboard.press('Enter');
    await page.getByText('Nothing waits for a decision.').waitFor();
    expect(await unlabeledControls(page)).toEqual([]);
    await tabTo(page, /^Search threads$/);
    await page.keyboard.type('hello');
    await page.locator('nav.threads li a').first().waitFor();
    await expect(page.locator('nav.threads li a').count()).resolves.toBe(1);
    await page.context().close();
  });
});
