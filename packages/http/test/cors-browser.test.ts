import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { reply, ScriptedModel } from '@lunation/runtime/testing';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ALICE, startApi, type TestApi } from './support.js';

/** Debian's Chromium (`apt-get install chromium`); the test never downloads a browser. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

let browser: Browser;
let page: Server;
let pageOrigin: string;
let api: TestApi | undefined;

beforeAll(async () => {
  // A missing browser fails the test, never skips it.
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is missing at ${CHROMIUM}: install Debian's package (apt-get install chromium) or set CHROMIUM_PATH`,
    );
  }
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
  // The app's page, on its own origin (another port than the API's).
  page = createServer((_, response) => {
    response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title>');
  });
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  pageOrigin = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await browser?.close();
  if (page) await new Promise((resolve) => page.close(resolve));
});

afterEach(async () => {
  await api?.close();
  api = undefined;
});

/** Posts a useChat message from the page to the API (a preflighted request: JSON and a bearer token). */
async function chatFromPage(
  apiUrl: string,
): Promise<{ status: number; chunks: string[] } | { failed: string }> {
  const context = await browser.newContext();
  try {
    const tab = await context.newPage();
    await tab.goto(pageOrigin);
    return await tab.evaluate(
      async ({ apiUrl, token }) => {
        try {
          const response = await fetch(`${apiUrl}/chat`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              id: crypto.randomUUID(),
              trigger: 'submit-message',
              messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hello' }] }],
            }),
          });
          const header = response.headers.get('x-vercel-ai-ui-message-stream');
          const chunks = (await response.text())
            .split('\n\n')
            .filter((line) => line.startsWith('data: {'))
            .map((line) => JSON.parse(line.slice(6)).type as string);
          return { status: response.status, chunks: [`header:${header}`, ...chunks] };
        } catch (error) {
          return { failed: String(error) };
        }
      },
      { apiUrl, token: ALICE },
    );
  } finally {
    await context.close();
  }
}

// Skipped only where Chromium is not installed (say which): the Node tests of cors.test.ts check the headers.
describe(`CORS in Chromium (${CHROMIUM}): a page on another origin`, () => {
  it('chats with an API whose cors option allows its origin', async () => {
    api = await startApi(new ScriptedModel([reply('Hi from afar.')]), {
      api: { cors: { origins: [pageOrigin] } },
    });
    expect(await chatFromPage(api.url)).toEqual({
      status: 200,
      chunks: [
        'header:v1',
        'start',
        'start-step',
        'text-start',
        'text-delta',
        'text-end',
        'finish-step',
        'finish',
      ],
    });
  });

  it('is blocked by the browser without the option, or from an origin not listed', async () => {
    api = await startApi(new ScriptedModel([reply('never')]));
    expect(await chatFromPage(api.url)).toEqual({ failed: expect.stringContaining('Failed to fetch') });
    await api.close();
    api = await startApi(new ScriptedModel([reply('never')]), {
      api: { cors: { origins: ['https://elsewhere.example'] } },
    });
    expect(await chatFromPage(api.url)).toEqual({ failed: expect.stringContaining('Failed to fetch') });
  });
});
