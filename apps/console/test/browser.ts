import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';

/** Debian's Chromium (`apt-get install chromium`); the tests never download a browser. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const repositoryRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/**
 * Where the tests save a screenshot of each state: `apps/console/test-results/screenshots/` (ignored by git),
 * or, with `LUNATION_UPDATE_SCREENSHOTS=1` (`pnpm --filter @lunation/console screenshots`), the committed
 * `docs/screenshots/` that the root README links. A plain `pnpm test` leaves the working tree clean.
 */
export const SCREENSHOTS =
  process.env.LUNATION_UPDATE_SCREENSHOTS === '1'
    ? join(repositoryRoot, 'docs', 'screenshots')
    : join(repositoryRoot, 'apps', 'console', 'test-results', 'screenshots');

/** Launches headless Chromium; fails (never skips) when it is missing. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is missing at ${CHROMIUM}: install Debian's package (apt-get install chromium) or set CHROMIUM_PATH`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: 20_000,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

/** A new page at 1280×800 whose every wait gives up after `timeoutMs`. */
export async function openPage(browser: Browser, timeoutMs = 15_000): Promise<Page> {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 800 },
    reducedMotion: 'reduce',
  });
  context.setDefaultTimeout(timeoutMs);
  context.setDefaultNavigationTimeout(timeoutMs);
  return context.newPage();
}

/** Saves `<name>.png` in {@link SCREENSHOTS}. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/**
 * Launches Chromium once for the file's tests (closed after them) and returns a getter for it. When Chromium
 * cannot start, every test fails with the reason (a failing `beforeAll` would only mark them skipped).
 */
export function useChromium(): () => Browser {
  let browser: Browser | undefined;
  let failure: unknown;
  beforeAll(async () => {
    try {
      browser = await launchChromium();
    } catch (error) {
      failure = error;
    }
  });
  afterAll(async () => {
    await browser?.close();
  });
  return () => {
    if (!browser) throw failure ?? new Error('Chromium was not launched');
    return browser;
  };
}
