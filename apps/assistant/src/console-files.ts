import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import type { Hono } from 'hono';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** The folder of the console's built files (`apps/console/dist`, made by `pnpm build`). */
export function consoleDistDir(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@lunation/console/package.json')), 'dist');
}

/**
 * The web console's files: `GET /` (and `/index.html`) is the page, `GET /assets/<file>` its bundled scripts and
 * styles, `GET /favicon.ico` its icon. Answers undefined for any other path, so the API handles it. The page holds no data (it asks the API,
 * with the user's token), so it is served without authentication. When the console is not built, `/` says how
 * to build it.
 */
export class ConsoleFiles {
  constructor(private readonly distDir: string = consoleDistDir()) {}

  /** The answer for `method` and `pathname`, or undefined when the path is not the console's. */
  async answer(method: string, pathname: string): Promise<Response | undefined> {
    const file =
      pathname === '/' || pathname === '/index.html'
        ? 'index.html'
        : pathname === '/favicon.ico'
          ? 'favicon.ico'
          : assetOf(pathname);
    if (file === undefined || (method !== 'GET' && method !== 'HEAD')) return undefined;
    let body: Buffer;
    try {
      body = await readFile(join(this.distDir, file));
    } catch {
      if (file !== 'index.html') return undefined;
      return new Response(NOT_BUILT, {
        status: 503,
        headers: { 'content-type': 'text/html; charset=utf-8', ...SECURITY_HEADERS },
      });
    }
    const headers = {
      'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
      'content-length': String(body.length),
      // Asset names carry a content hash: they never change. The page itself is checked every time.
      'cache-control':
        file === 'index.html'
          ? 'no-cache'
          : file === 'favicon.ico'
            ? 'public, max-age=86400'
            : 'public, max-age=31536000, immutable',
      ...SECURITY_HEADERS,
    };
    return new Response(method === 'HEAD' ? null : new Uint8Array(body), { status: 200, headers });
  }
}

/** `assets/<name>` for `/assets/<name>` with a plain file name (no folders, no `..`), else undefined. */
function assetOf(pathname: string): string | undefined {
  const match = /^\/assets\/([A-Za-z0-9_-][A-Za-z0-9_.-]*)$/.exec(pathname);
  return match ? `assets/${match[1]}` : undefined;
}

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Lunation console</title></head>
<body><main><h1>The console is not built</h1><p>Run <code>pnpm build</code> at the repository root, then reload.</p>
<p>The HTTP API works without it.</p></main></body></html>`;

/**
 * Routes serving the console (`AssistantServerOptions.routes`): `GET`/`HEAD` of `/`, `/index.html`,
 * `/favicon.ico` and `/assets/*`; a missing asset falls through to the app's not-found answer (the API's JSON 404).
 */
export function consoleRoutes(files: ConsoleFiles = new ConsoleFiles()): (app: Hono) => void {
  return (app) => {
    app.on(['GET', 'HEAD'], ['/', '/index.html', '/favicon.ico', '/assets/*'], async (context) => {
      return (await files.answer(context.req.method, context.req.path)) ?? context.notFound();
    });
  };
}
