import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type AppProcess, serve, temporaryDir } from './assistant-server.js';
import { openPage, screenshot, useChromium } from './browser.js';
import { CuttableProxy } from './cuttable-proxy.js';
import { appliedEvents, RECORD_EVENTS, RECORD_STATUS, statusTexts } from './page-recorders.js';

describe('the console across a single server SIGKILLed mid-run (no fleet, a SQLite file)', {
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
    await Promise.all(processes.splice(0).map((app) => app.stop()));
    await dataDir?.remove();
  });

  it('shows the run finishing after the restart, without a new message and nothing twice', async () => {
    const first = await serve(dataDir.path);
    processes.push(first.app);
    const started = await CuttableProxy.start(first.port);
    proxy = started.proxy;
    const page = await openPage(browser());
    await page.addInitScript(RECORD_EVENTS);
    await page.addInitScript(RECORD_STATUS);
    await page.goto(started.url);
    await page.getByRole('link', { name: 'New thread' }).click();
    await page.getByLabel('Message').fill('call slow_task {"steps":8}');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('progressbar', { name: 'Progress of slow_task' }).waitFor();

    first.app.child.kill('SIGKILL');
    await first.app.exited;
    const second = await serve(dataDir.path);
    processes.push(second.app);
    proxy.retarget(second.port);
    // A page opened on the thread while the restarted server continues the run: the stored history, then the
    // continuation live.
    await second.app.waitFor(/Continued 1 run\(s\)/);
    const threadUrl = page.url();
    const other = await openPage(browser());
    await other.addInitScript(RECORD_EVENTS);
    await other.goto(threadUrl);
    // Mid-run, the request (stored before the kill) shows above the live slow task, once.
    await other.getByRole('progressbar', { name: 'Progress of slow_task' }).waitFor();
    await expect(other.locator('.entry-user').allTextContents()).resolves.toEqual([
      'You call slow_task {"steps":8}',
    ]);

    await page.getByText('The slow task is done: All 8 steps finished.').waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Send' }).and(page.locator(':disabled')).waitFor();
    await screenshot(page, 'single-server-restarted');
    expect((await statusTexts(page)).some((text) => text.startsWith('Connection lost; reconnecting'))).toBe(
      true,
    );
    // The continuation streamed to the page: it starts resumed, re-runs the slow task once and ends the run.
    const events = await appliedEvents(page);
    const runIds = new Set(events.map((event) => event.runId));
    expect(runIds.size).toBe(1);
    // The first life's events, then the continuation's (ids of the restarted server's log), each applied once.
    const types = events.map((event) => event.type);
    expect(types.filter((type) => type === 'run-start')).toHaveLength(2);
    expect(types.filter((type) => type === 'tool-execution-start')).toHaveLength(2);
    expect(types.filter((type) => type === 'run-end')).toHaveLength(1);
    const restartedAt = types.lastIndexOf('run-start');
    expect(types.indexOf('tool-execution-start', restartedAt)).toBeGreaterThan(restartedAt);
    expect(new Set(events.slice(restartedAt).map((event) => `${event.id}`)).size).toBe(
      events.length - restartedAt,
    );
    expect(events.slice(restartedAt).every((event) => /^[0-9a-f]{8}\.[1-9][0-9]*$/.test(`${event.id}`))).toBe(
      true,
    );
    expect(events.at(-1)?.type).toBe('run-end');
    expect(second.app.stdout).toContain('Continued 1 run(s) cut off by a previous stop.');

    // Each message once: the request, one slow_task call, one answer.
    await expect(page.locator('.entry-user').allTextContents()).resolves.toEqual([
      'You call slow_task {"steps":8}',
    ]);
    await expect(page.locator('.tool').filter({ hasText: 'slow_task' }).count()).resolves.toBe(1);
    await expect(page.getByText('The slow task is done: All 8 steps finished.').count()).resolves.toBe(1);
    await other.getByText('The slow task is done: All 8 steps finished.').waitFor({ timeout: 30_000 });
    expect((await appliedEvents(other))[0]?.id).toMatch(/^[0-9a-f]{8}\.1$/);
    await expect(other.locator('.entry-user').allTextContents()).resolves.toEqual([
      'You call slow_task {"steps":8}',
    ]);
    await expect(other.locator('.tool').filter({ hasText: 'slow_task' }).count()).resolves.toBe(1);
    await expect(other.getByText('The slow task is done: All 8 steps finished.').count()).resolves.toBe(1);
    await other.context().close();

    // A reload shows the same, from the store.
    await page.reload();
    await page.getByText('The slow task is done: All 8 steps finished.').waitFor();
    await expect(page.locator('.tool').filter({ hasText: 'slow_task' }).count()).resolves.toBe(1);
    await expect(page.getByText('The slow task is done: All 8 steps finished.').count()).resolves.toBe(1);
    await page.context().close();
  });
});
