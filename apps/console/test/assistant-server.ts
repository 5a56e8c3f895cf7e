import { AppProcess, temporaryDir } from '../../assistant/test/support.js';

export { AppProcess, temporaryDir };

/** `pnpm start serve` on a free port with the demo model and a SQLite file in `dataDir`. */
export async function serve(
  dataDir: string,
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<{ app: AppProcess; url: string; port: number }> {
  const app = new AppProcess(
    ['serve', '--port', '0', '--provider', 'demo', '--data-dir', dataDir, ...extra],
    env,
  );
  const [, url] = await withTimeout(
    app.waitFor(/listening on (http:\/\/\S+)/),
    30_000,
    'the server to start',
    app,
  );
  await withTimeout(app.waitFor(/Console: http/), 5_000, 'the console address', app);
  return { app, url: url as string, port: Number(new URL(url as string).port) };
}

/** `pnpm start worker` of a fleet; resolves once it is ready. */
export async function worker(dataDir: string, extra: string[] = []): Promise<AppProcess> {
  const app = new AppProcess(['worker', '--provider', 'demo', '--data-dir', dataDir, ...extra]);
  await withTimeout(app.waitFor(/worker \S+ ready/), 30_000, 'the worker to start', app);
  return app;
}

/** Rejects after `ms` (the app's output in the message), so a test never hangs on a process. */
export async function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  what: string,
  app?: AppProcess,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(
                `Timed out after ${ms} ms waiting for ${what}${app ? `\nstdout:\n${app.stdout}\nstderr:\n${app.stderr}` : ''}`,
              ),
            ),
          ms,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
