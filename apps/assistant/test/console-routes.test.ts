import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConsoleFiles, consoleRoutes } from '../src/console-files.js';
import { DemoModel } from '../src/demo-model.js';
import { temporaryDir } from './support.js';
import { errorOf, startServer, type TestServer } from './test-server.js';

describe('the server leaves GET / and /assets/* to the web console', () => {
  let sandbox: Awaited<ReturnType<typeof temporaryDir>> | undefined;
  let api: TestServer | undefined;

  afterEach(async () => {
    await api?.close();
    await sandbox?.remove();
  });

  it('answers them with routes of its own, the API everywhere else', async () => {
    sandbox = await temporaryDir();
    api = await startServer(new DemoModel({ tokenDelayMs: 0 }), sandbox.path, {
      routes: (app) => {
        app.get('/', (c) => c.html('<h1>console</h1>'));
        app.get('/assets/*', (c) => c.text(`asset ${c.req.path}`));
      },
    });
    expect(await (await api.call('/', { token: '' })).text()).toBe('<h1>console</h1>');
    expect(await (await api.call('/assets/app.js', { token: '' })).text()).toBe('asset /assets/app.js');
    expect((await api.call('/threads')).status).toBe(200);
    expect(await errorOf(await api.call('/nowhere'))).toMatchObject({ status: 404, code: 'not-found' });
  });

  it('without them, answers 404 JSON there like any unknown path', async () => {
    sandbox = await temporaryDir();
    api = await startServer(new DemoModel({ tokenDelayMs: 0 }), sandbox.path);
    expect(await errorOf(await api.call('/'))).toMatchObject({ status: 404, code: 'not-found' });
  });
});

describe('consoleRoutes: the built console on the server', () => {
  let sandbox: Awaited<ReturnType<typeof temporaryDir>> | undefined;
  let dist: Awaited<ReturnType<typeof temporaryDir>> | undefined;
  let api: TestServer | undefined;

  afterEach(async () => {
    await api?.close();
    await sandbox?.remove();
    await dist?.remove();
  });

  it('serves the page and its assets without a token; a missing asset is the API 404', async () => {
    sandbox = await temporaryDir();
    dist = await temporaryDir();
    await mkdir(join(dist.path, 'assets'));
    await writeFile(join(dist.path, 'index.html'), '<!doctype html><title>console</title>');
    await writeFile(join(dist.path, 'assets', 'app-1.js'), 'export {}');
    api = await startServer(new DemoModel({ tokenDelayMs: 0 }), sandbox.path, {
      routes: consoleRoutes(new ConsoleFiles(dist.path)),
    });
    const page = await api.call('/', { token: '' });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>console</title>');
    const script = await api.call('/assets/app-1.js', { token: '' });
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await errorOf(await api.call('/assets/missing.js'))).toMatchObject({
      status: 404,
      code: 'not-found',
    });
    expect(await errorOf(await api.call('/threads', { token: '' }))).toMatchObject({ status: 401 });
  });
});
