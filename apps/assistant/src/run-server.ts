import { type Dispatcher, LunationError, type LunationStore } from '@lunation/contract';
import type { AgentRuntime } from '@lunation/runtime';
import { AssistantServer } from './assistant-server.js';
import { consoleRoutes } from './console-files.js';

export interface ServeOptions {
  runtime: AgentRuntime;
  store: LunationStore;
  /** Serve a fleet through this dispatcher (the workers run the threads). */
  dispatcher?: Dispatcher | undefined;
  host: string;
  port: number;
  tokens: ReadonlyMap<string, string>;
  banner: string;
  log: (line: string) => void;
  /** The figures for `GET /metrics`, in the Prometheus text format. */
  metrics?: () => Promise<string>;
}

/** Serves the HTTP API and the web console until SIGTERM or SIGINT, then shuts down gracefully (a second signal forces exit). */
export async function runServer(options: ServeOptions): Promise<void> {
  const server = new AssistantServer({
    runtime: options.runtime,
    store: options.store,
    tokens: options.tokens,
    // The web console (apps/console, built by `pnpm build`) at / and /assets/*.
    routes: consoleRoutes(),
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
  });
  let url: string;
  try {
    url = await server.listen(options.port, options.host);
  } catch (error) {
    throw new LunationError(
      'invalid-argument',
      `Cannot listen on ${options.host}:${options.port}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const resources = new Set(options.tokens.values());
  options.log(
    `Lunation assistant listening on ${url}${options.dispatcher ? ' (fleet: workers run the threads)' : ''}`,
  );
  options.log(`  Console: ${url}/ (open it in a browser)`);
  options.log(
    `  Health: ${url}/healthz, ${url}/readyz${options.metrics ? ` · Metrics: ${url}/metrics` : ''}`,
  );
  options.log(`  ${options.banner}`);
  options.log(
    resources.size === 0
      ? '  No authentication (loopback only); every caller shares the "local" threads.'
      : `  Bearer tokens required; resources: ${[...resources].join(', ')}.`,
  );
  if (!options.dispatcher) {
    // Runs cut off when a previous life of this server died continue now, in the background.
    server.resumeCutOffRuns().then(
      ({ resumed, busy, failed }) => {
        if (resumed.length > 0) options.log(`Continued ${resumed.length} run(s) cut off by a previous stop.`);
        if (busy.length > 0)
          options.log(`Left ${busy.length} cut-off run(s) busy elsewhere: ${busy.join(', ')}.`);
        for (const { threadId, error } of failed) {
          options.log(
            `Could not continue the cut-off run of thread ${threadId}: ${(error as Error).message}`,
          );
        }
      },
      (error: unknown) => options.log(`Could not scan for cut-off runs: ${(error as Error).message}`),
    );
  }
  const signal = await nextSignal(['SIGTERM', 'SIGINT']);
  options.log(`${signal}: finishing active runs and shutting down…`);
  const force = () => process.exit(1);
  process.once('SIGTERM', force);
  process.once('SIGINT', force);
  await server.close();
  process.off('SIGTERM', force);
  process.off('SIGINT', force);
}

export function nextSignal(signals: NodeJS.Signals[]): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      for (const name of signals) process.off(name, onSignal);
      resolve(signal);
    };
    for (const name of signals) process.on(name, onSignal);
  });
}
