import type { Page } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { temporaryDir } from './assistant-server.js';
import { openPage, screenshot, useChromium } from './browser.js';
import { TestFleet } from './fleet.js';
import { expectWholeRun, RECORD_EVENTS, RECORD_STATUS, statusTexts } from './page-recorders.js';

describe('the console recovers its event stream (a fleet on a SQLite file and Redis)', {
  timeout: 90_000,
}, () => {
  const browser = useChromium();
  let dataDir: Awaited<ReturnType<typeof temporaryDir>>;
  let fleet: TestFleet;

  beforeEach(async () => {
    dataDir = await temporaryDir();
    fleet = new TestFleet(dataDir.path);
    await fleet.start();
    await fleet.worker();
  });
  afterEach(async () => {
    await fleet?.close();
    await dataDir?.remove();
  });

  async function startSlowTask(): Promise<Page> {
    const page = await openPage(browser());
    await page.addInitScript(RECORD_EVENTS);
    await page.addInitScript(RECORD_STATUS);
    await page.goto(fleet.url);
    await page.getByRole('link', { name: 'New thread' }).click();
    await page.getByLabel('Message').fill('run the slow task with 6 steps');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('progressbar', { name: 'Progress of slow_task' }).waitFor();
    return page;
  }

  it('reconnects with Last-Event-ID after the network drops, without losing or repeating events', async () => {
    const page = await startSlowTask();
    fleet.proxy.cut({ refuse: true });
    await page.getByRole('status').filter({ hasText: 'Connection lost; reconnecting' }).waitFor();
    await screenshot(page, 'reconnecting');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    fleet.proxy.restore();
    await page.getByText('The slow task is done: All 6 steps finished.').waitFor({ timeout: 20_000 });
    await expectWholeRun(page);
    await page.context().close();
  });

  it('recovers when the server is SIGKILLed and restarted mid-run', async () => {
    const page = await startSlowTask();
    await fleet.restartServer();
    await page.getByText('The slow task is done: All 6 steps finished.').waitFor({ timeout: 30_000 });
    await expectWholeRun(page);
    expect((await statusTexts(page)).some((text) => text.startsWith('Connection lost; reconnecting'))).toBe(
      true,
    );
    await screenshot(page, 'server-restarted');
    await page.context().close();
  });
});
