import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { temporaryDir } from './assistant-server.js';
import { openPage, screenshot, useChromium } from './browser.js';
import { TestFleet } from './fleet.js';

describe('the timeline of a run whose worker was SIGKILLed mid-tool', { timeout: 90_000 }, () => {
  const browser = useChromium();
  let dataDir: Awaited<ReturnType<typeof temporaryDir>>;
  let fleet: TestFleet;

  beforeEach(async () => {
    dataDir = await temporaryDir();
    fleet = new TestFleet(dataDir.path);
    await fleet.start();
  });
  afterEach(async () => {
    await fleet?.close();
    await dataDir?.remove();
  });

  it('shows the re-run call, the takeover by another process, and each step with its model call', async () => {
    const first = await fleet.worker();
    const page = await openPage(browser());
    await page.goto(fleet.url);
    await page.getByRole('link', { name: 'New thread' }).click();
    await page.getByLabel('Message').fill('run the slow task with 4 steps');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('progressbar', { name: 'Progress of slow_task' }).waitFor();
    first.child.kill('SIGKILL');
    await first.exited;
    await fleet.worker();
    // The page's stream just goes on: the second worker re-runs the cut-off call and finishes the run.
    const rerun = page.locator('.tool').filter({ hasText: 're-run after a crash' });
    await rerun.waitFor({ timeout: 30_000 });
    await page.getByText('The slow task is done: All 4 steps finished.').waitFor({ timeout: 30_000 });
    // The crash note stays on the finished run (the page reloads it from the store when it ends), and after a
    // reload of the page too: the run's timeline tells which call ran again.
    await page.getByRole('button', { name: 'Stop' }).and(page.locator(':disabled')).waitFor();
    for (const state of ['ended', 'reloaded']) {
      if (state === 'reloaded') {
        await page.reload();
        await page.getByText('The slow task is done: All 4 steps finished.').waitFor();
      }
      await expect(rerun.count(), state).resolves.toBe(1);
      await page.getByText('This run was cut off by a crash and continued where it stopped.').waitFor();
    }

    await page.getByText(/Run timelines/).click();
    await page
      .getByRole('link', { name: /^Timeline of run/ })
      .first()
      .click();
    const entries = page.getByRole('list', { name: 'Timeline entries' });
    await entries.waitFor();
    const texts = await entries.locator('li').allTextContents();
    const tool = texts.filter((text) => text.includes('Tool slow_task'));
    expect(tool).toHaveLength(1);
    expect(tool[0]).toContain('2 attempts');
    expect(tool[0]).toContain('re-run after a crash');
    expect(texts.some((text) => /Lease takeover|Recovered after a crash/.test(text))).toBe(true);
    expect(
      texts.filter((text) => /^\+[\d.]+ sStep \d+ on process \d/.test(text)).length,
    ).toBeGreaterThanOrEqual(2);
    expect(
      texts
        .filter((text) => text.includes('model call'))
        .every((text) => /\d+ in \/ \d+ out tokens/.test(text)),
    ).toBe(true);
    expect(texts.at(-1)).toContain('Run ended: done (natural-end)');
    const processes = await page.getByRole('definition').filter({ hasText: 'process 2' }).count();
    expect(processes).toBe(1);
    await screenshot(page, 'timeline-crash');
    await page.context().close();
  });
});
