import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppProcess, serve, temporaryDir } from './assistant-server.js';
import { expectNoAxeViolations } from './axe.js';
import { openPage, screenshot, useChromium } from './browser.js';

describe('the console with bearer tokens: sign-in, and one tenant never sees another', {
  timeout: 60_000,
}, () => {
  const browser = useChromium();
  let dataDir: Awaited<ReturnType<typeof temporaryDir>>;
  let server: { app: AppProcess; url: string };

  beforeAll(async () => {
    dataDir = await temporaryDir();
    server = await serve(dataDir.path, ['--token', 'alice=alice-secret', '--token', 'bob=bob-secret']);
  });
  afterAll(async () => {
    await server?.app.stop();
    await dataDir?.remove();
  });

  it('asks for a token, refuses a wrong one, shows each tenant only its own threads, and deletes one', async () => {
    const alice = await openPage(browser());
    await alice.goto(server.url);
    await alice.getByLabel('Access token').fill('not-a-token');
    await alice.getByRole('button', { name: 'Sign in' }).click();
    await alice.getByRole('alert').filter({ hasText: 'That token was refused.' }).waitFor();
    await screenshot(alice, 'sign-in');
    await alice.getByLabel('Access token').fill('alice-secret');
    await alice.getByRole('button', { name: 'Sign in' }).click();
    await alice.getByRole('link', { name: 'New thread' }).click();
    await alice.getByLabel('Message').fill('what is 2 + 2');
    await alice.getByRole('button', { name: 'Send' }).click();
    await alice.getByText('2 + 2 = 4.').waitFor();
    const aliceThread = decodeURIComponent(/#\/threads\/([^/]+)/.exec(alice.url())?.[1] ?? '');
    await expect(alice.locator('nav.threads li a').count()).resolves.toBe(1);
    // Her run's timeline names its process without the server's host name or data folder.
    await alice.getByRole('button', { name: 'Stop' }).and(alice.locator(':disabled')).waitFor();
    await alice.getByText(/Run timelines/).click();
    await alice.getByRole('link', { name: /^Timeline of run 1/ }).click();
    await alice.getByRole('list', { name: 'Timeline entries' }).waitFor();
    const timelineText = (await alice.locator('main').textContent()) ?? '';
    expect(timelineText).toContain('Step 1 on process 1');
    expect(timelineText).not.toContain(hostname());
    expect(timelineText).not.toContain(dataDir.path);
    expect(timelineText).not.toContain('assistant-serve');
    await expectNoAxeViolations(alice, "a tenant's run timeline");
    await alice.goBack();

    // Bob, in a separate browser context, signs in with his token: Alice's thread is not listed, not openable.
    const bob = await openPage(browser());
    await bob.goto(server.url);
    await bob.getByLabel('Access token').fill('bob-secret');
    await bob.getByRole('button', { name: 'Sign in' }).click();
    await bob.getByRole('link', { name: 'New thread' }).waitFor();
    await bob.getByText('No threads yet.').waitFor();
    await bob.goto(`${server.url}/#/threads/${encodeURIComponent(aliceThread)}`);
    await bob
      .getByRole('alert')
      .filter({ hasText: `There is no thread "${aliceThread}"` })
      .waitFor();
    await expect(bob.getByText('2 + 2 = 4.').count()).resolves.toBe(0);
    await screenshot(bob, 'other-tenant');

    // The API agrees: Bob's token lists no thread of Alice's.
    const listed = (await (
      await fetch(`${server.url}/threads`, { headers: { authorization: 'Bearer bob-secret' } })
    ).json()) as { threads: Array<{ id: string }> };
    expect(listed.threads.map((thread) => thread.id)).not.toContain(aliceThread);

    // Alice deletes her thread (after confirming): gone from her list and from the API.
    alice.once('dialog', (dialog) => void dialog.accept());
    await alice.getByRole('button', { name: /^Delete thread/ }).click();
    await alice.getByText('No threads yet.').waitFor();
    const gone = await fetch(`${server.url}/threads/${encodeURIComponent(aliceThread)}`, {
      headers: { authorization: 'Bearer alice-secret' },
    });
    expect(gone.status).toBe(404);

    // Signing out forgets the token.
    await alice.getByRole('button', { name: 'Sign out' }).click();
    await alice.getByLabel('Access token').waitFor();
    await alice.context().close();
    await bob.context().close();
  });
});
