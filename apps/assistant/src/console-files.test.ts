import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConsoleFiles } from './console-files.js';

describe('ConsoleFiles', () => {
  let dist: string;
  beforeAll(async () => {
    dist = await mkdtemp(join(tmpdir(), 'lunation-console-'));
    await mkdir(join(dist, 'assets'));
    await writeFile(join(dist, 'index.html'), '<!doctype html><title>console</title>');
    await writeFile(join(dist, 'assets', 'index-abc.js'), 'console.log(1)');
    await writeFile(join(dist, 'secret.txt'), 'not served');
    await writeFile(join(dist, 'favicon.ico'), new Uint8Array([0, 0, 1, 0]));
  });
  afterAll(() => rm(dist, { recursive: true, force: true }));

  it('serves the page at / and hashed assets with their types and caching', async () => {
    const files = new ConsoleFiles(dist);
    const page = await files.answer('GET', '/');
    expect(page?.status).toBe(200);
    expect(page?.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page?.headers.get('cache-control')).toBe('no-cache');
    expect(page?.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(await page?.text()).toContain('<title>console</title>');
    const script = await files.answer('GET', '/assets/index-abc.js');
    expect(script?.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(script?.headers.get('cache-control')).toContain('immutable');
    expect(await script?.text()).toBe('console.log(1)');
    const head = await files.answer('HEAD', '/');
    expect(head?.status).toBe(200);
    expect(await head?.text()).toBe('');
  });

  it('serves the icon at /favicon.ico (browsers ask for it on every page)', async () => {
    const files = new ConsoleFiles(dist);
    const icon = await files.answer('GET', '/favicon.ico');
    expect(icon?.status).toBe(200);
    expect(icon?.headers.get('content-type')).toBe('image/x-icon');
    expect(new Uint8Array(await icon!.arrayBuffer())).toEqual(new Uint8Array([0, 0, 1, 0]));
    expect(await files.answer('GET', '/favicon.png')).toBeUndefined();
  });

  it('leaves every other path to the API: no folders, no parent paths, no other methods', async () => {
    const files = new ConsoleFiles(dist);
    for (const path of [
      '/threads',
      '/secret.txt',
      '/assets/../secret.txt',
      '/assets/%2e%2e%2fsecret.txt',
      '/assets/.hidden',
      '/assets/missing.js',
      '/assets/',
    ]) {
      expect(await files.answer('GET', path), path).toBeUndefined();
    }
    expect(await files.answer('POST', '/')).toBeUndefined();
  });

  it('says how to build the console when it is not built', async () => {
    const files = new ConsoleFiles(join(dist, 'nothing-here'));
    const page = await files.answer('GET', '/');
    expect(page?.status).toBe(503);
    expect(await page?.text()).toContain('pnpm build');
  });
});
