import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import type { Dispatcher, LunationStore } from '@lunation/contract';
import { createHttpApi, FleetFront, type HttpApi, LocalFront, tokenAuth } from '@lunation/http';
import type { AgentRuntime, ResumedCutOffRuns } from '@lunation/runtime';
import { type Context, Hono } from 'hono';

export interface AssistantServerOptions {
  /** Runs the threads in this process; unused with `dispatcher`. */
  runtime: AgentRuntime;
  store: LunationStore;
  /** Serve a fleet: submit to its workers through this dispatcher and stream from its event logs. */
  dispatcher?: Dispatcher;
  /** Bearer token → resource id. Empty: no authentication, every caller is the `local` resource. */
  tokens?: ReadonlyMap<string, string>;
  /** Largest accepted request body. @default 1048576 (1 MiB) */
  maxBodyBytes?: number;
  /** Deepest accepted nesting of arrays and objects in a request body. @default 64 */
  maxJsonDepth?: number;
  /** Interval of SSE keep-alive comments. @default 15000 */
  heartbeatMs?: number;
  /** Where unexpected errors are reported. @default console.error */
  logError?: (error: unknown) => void;
  /** Adds routes of its own to the app before the API's (the web console's `GET /` and `/assets/*`). */
  routes?: (app: Hono) => void;
  /** Answers `GET /metrics` with these figures (the Prometheus text format). @default no `/metrics` */
  metrics?: () => Promise<string>;
  /** How long `GET /readyz` waits for the store and the dispatcher. @default 2000 */
  readyTimeoutMs?: number;
}

/** The paths `@lunation/http` answers; `GET /` and `/assets/*` stay free for the web console. */
const API_PATHS = ['/threads', '/threads/*', '/inbox', '/chat', '/chat/*'];

/**
 * The assistant's HTTP server: a Hono app on `@hono/node-server` that mounts `@lunation/http` (threads,
 * messages streamed as Server-Sent Events, decisions, run timelines, the `useChat` endpoint). Each bearer token
 * sees only its own resource's threads. Other routes can be added to `app` (any unknown path answers the API's
 * JSON 404).
 */
export class AssistantServer {
  readonly server: Server;
  readonly app: Hono;
  readonly api: HttpApi;
  private readonly runtime: AgentRuntime;
  private readonly local: LocalFront | undefined;
  private readonly requests = new Set<Promise<unknown>>();
  private closing: Promise<void> | undefined;

  constructor(options: AssistantServerOptions) {
    const tokens = options.tokens ?? new Map();
    this.runtime = options.runtime;
    this.local = options.dispatcher ? undefined : new LocalFront(options.runtime);
    this.api = createHttpApi({
      store: options.store,
      front:
        this.local ?? new FleetFront({ dispatcher: options.dispatcher as Dispatcher, store: options.store }),
      ...(tokens.size > 0 ? { authenticate: tokenAuth(tokens) } : {}),
      ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
      ...(options.maxJsonDepth === undefined ? {} : { maxJsonDepth: options.maxJsonDepth }),
      ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
      ...(options.logError ? { logError: options.logError } : {}),
    });
    const mount = (context: Context) => this.track(this.api.handle(context.req.raw));
    this.app = new Hono();
    // Probes for an orchestrator, unauthenticated: alive, and able to reach what it serves from.
    this.app.get('/healthz', (context) => context.json({ status: 'ok' }));
    this.app.get('/readyz', async (context) => {
      const checks = await readiness(options.store, options.dispatcher, options.readyTimeoutMs ?? 2_000);
      const ready = Object.values(checks).every((check) => check === 'ok');
      return context.json({ status: ready ? 'ready' : 'unavailable', checks }, ready ? 200 : 503);
    });
    const metrics = options.metrics;
    if (metrics) {
      this.app.get('/metrics', async (context) =>
        context.body(await metrics(), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }),
      );
    }
    options.routes?.(this.app);
    for (const path of API_PATHS) this.app.all(path, mount);
    this.app.notFound(mount);
    this.server = createAdaptorServer({ fetch: this.app.fetch }) as Server;
  }

  /**
   * Continues the runs cut off when a previous life of this server died (single-process mode only; with a
   * dispatcher it does nothing): their events stream to clients as each thread's active run. Resolves once each such
   * thread is continued or found busy.
   */
  async resumeCutOffRuns(): Promise<ResumedCutOffRuns> {
    const local = this.local;
    if (local === undefined) return { resumed: [], busy: [], failed: [] };
    return this.runtime.resumeCutOffRuns({ onRun: (run) => local.adopt(run) });
  }

  /** Starts listening; resolves with the base URL, e.g. `http://127.0.0.1:8787`. */
  async listen(port: number, host: string): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const address = this.server.address() as AddressInfo;
    const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `http://${shown}:${address.port}`;
  }

  /**
   * Stops accepting connections, ends what the API runs (this process's runs are cancelled, each ending
   * cleanly and checkpointed; a fleet's streams detach, their runs go on), waits for the streams to finish,
   * then closes the remaining connections. The store is left open.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      await this.api.close();
      await Promise.allSettled(this.requests);
      this.server.closeAllConnections();
      await closed;
    })();
    return this.closing;
  }

  private track(answer: Promise<Response>): Promise<Response> {
    this.requests.add(answer);
    void answer.finally(() => this.requests.delete(answer));
    return answer;
  }
}

/** Whether the store (and the dispatcher) answer within `timeoutMs`: `ok`, or what went wrong. */
export async function readiness(
  store: LunationStore,
  dispatcher: Dispatcher | undefined,
  timeoutMs: number,
): Promise<Record<string, string>> {
  const check = async (probe: () => Promise<unknown>): Promise<string> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        probe(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
      return 'ok';
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    } finally {
      clearTimeout(timer);
    }
  };
  const [storeCheck, dispatcherCheck] = await Promise.all([
    check(() => store.listThreads({ limit: 1 })),
    dispatcher ? check(() => dispatcher.depth()) : undefined,
  ]);
  return { store: storeCheck, ...(dispatcherCheck === undefined ? {} : { dispatcher: dispatcherCheck }) };
}
