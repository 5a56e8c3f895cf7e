import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type Dispatcher,
  jsonObjectSchema,
  type LunationStore,
  type ResumeDecision,
  type ThreadRecord,
} from '@lunation/contract';
import { type AgentRuntime, FleetClient } from '@lunation/runtime';
import { createId } from '@lunation/runtime/internal';
import { z } from 'zod';
import { FleetFront } from './fleet-front.js';
import { HttpError, toHttpError } from './http-error.js';
import { type BodyLimits, CLIENT_CLOSED, parseBody, readJsonBody, sendJson } from './http-io.js';
import { LocalFront } from './local-front.js';
import type { RunFront } from './run-front.js';
import { LOCAL_RESOURCE, TokenAuth } from './token-auth.js';

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
}

interface RequestContext {
  request: IncomingMessage;
  response: ServerResponse;
  url: URL;
  /** Whose threads the caller may see. */
  resource: string;
  /** The thread id from the path, when the route has one. */
  threadId: string;
  /** The run id from the path, when the route has one. */
  runId: string;
}

type Handler = (context: RequestContext) => Promise<void>;

const createThreadBodySchema = z.object({ metadata: jsonObjectSchema.optional() }).strict().optional();
const messageBodySchema = z.object({ text: z.string().min(1) }).strict();
// Only what the server needs to fill in decision ids: the runtime checks each decision at its boundary.
const decisionsBodySchema = z
  .object({ decisions: z.array(z.looseObject({ decisionId: z.string().min(1).optional() })).min(1) })
  .strict();
const limitSchema = z.coerce.number().int().min(1).max(100);

/**
 * The assistant's HTTP API on node:http: threads, messages streamed as Server-Sent Events, decisions,
 * history and cancellation. Each bearer token sees only its own resource's threads.
 */
export class AssistantServer {
  readonly server: Server;
  private readonly front: RunFront;
  private readonly store: LunationStore;
  private readonly auth: TokenAuth;
  private readonly bodyLimits: BodyLimits;
  private readonly logError: (error: unknown) => void;
  private readonly requests = new Set<Promise<void>>();
  private closing: Promise<void> | undefined;

  private readonly routes: Array<{ path: RegExp; methods: Record<string, Handler> }> = [
    {
      path: /^\/threads\/?$/,
      methods: { GET: (context) => this.listThreads(context), POST: (context) => this.createThread(context) },
    },
    { path: /^\/threads\/([^/]+)$/, methods: { GET: (context) => this.getThread(context) } },
    {
      path: /^\/threads\/([^/]+)\/messages$/,
      methods: { GET: (context) => this.listMessages(context), POST: (context) => this.postMessage(context) },
    },
    { path: /^\/threads\/([^/]+)\/decisions$/, methods: { POST: (context) => this.postDecisions(context) } },
    { path: /^\/threads\/([^/]+)\/cancel$/, methods: { POST: (context) => this.cancel(context) } },
    {
      path: /^\/threads\/([^/]+)\/runs\/([^/]+)\/events$/,
      methods: { GET: (context) => this.followRun(context) },
    },
  ];

  constructor(options: AssistantServerOptions) {
    this.store = options.store;
    const heartbeatMs = options.heartbeatMs ?? 15_000;
    this.front = options.dispatcher
      ? new FleetFront(
          new FleetClient({ dispatcher: options.dispatcher, store: options.store }),
          options.dispatcher,
          options.store,
          heartbeatMs,
        )
      : new LocalFront(options.runtime, heartbeatMs);
    this.auth = new TokenAuth(options.tokens ?? new Map());
    this.bodyLimits = { maxBytes: options.maxBodyBytes ?? 1_048_576, maxDepth: options.maxJsonDepth ?? 64 };
    this.logError = options.logError ?? ((error) => console.error(error));
    this.server = createServer((request, response) => {
      const handled = this.handle(request, response);
      this.requests.add(handled);
      void handled.finally(() => this.requests.delete(handled));
    });
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
   * Stops accepting connections, ends what the front runs (this process's runs are cancelled, each ending
   * cleanly and checkpointed; a fleet's streams detach, their runs go on), waits for the streams to finish,
   * then closes the remaining connections. The store is left open.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      await this.front.close();
      await Promise.allSettled(this.requests);
      this.server.closeAllConnections();
      await closed;
    })();
    return this.closing;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    try {
      if (this.closing) {
        throw new HttpError(503, 'shutting-down', 'The server is shutting down; retry shortly', {
          connection: 'close',
        });
      }
      const resource = this.authenticate(request);
      const url = new URL(request.url ?? '/', 'http://localhost');
      const route = this.routes.find((candidate) => candidate.path.test(url.pathname));
      if (!route) throw new HttpError(404, 'not-found', `No route ${url.pathname}`);
      const method = request.method ?? '';
      const handler = Object.hasOwn(route.methods, method) ? route.methods[method] : undefined;
      if (!handler) {
        const allowed = Object.keys(route.methods).join(', ');
        throw new HttpError(
          405,
          'method-not-allowed',
          `${request.method} is not allowed here; use ${allowed}`,
          {
            allow: allowed,
          },
        );
      }
      const [, encodedId, encodedRunId] = route.path.exec(url.pathname) ?? [];
      await handler({
        request,
        response,
        url,
        resource,
        threadId: encodedId ? decodeId(encodedId) : '',
        runId: encodedRunId ? decodeId(encodedRunId) : '',
      });
    } catch (error) {
      const httpError = toHttpError(error);
      if (httpError.code === CLIENT_CLOSED) {
        response.destroy();
        return;
      }
      if (httpError.status >= 500 && httpError.code === 'internal') this.logError(error);
      if (response.headersSent) response.end();
      else sendJson(response, httpError.status, errorBody(httpError), httpError.headers);
    }
  }

  private authenticate(request: IncomingMessage): string {
    if (!this.auth.enabled) return LOCAL_RESOURCE;
    const resource = this.auth.resourceOf(request.headers.authorization);
    if (resource === undefined) {
      throw new HttpError(401, 'unauthorized', 'Send a valid token as "Authorization: Bearer <token>"', {
        'www-authenticate': 'Bearer',
      });
    }
    return resource;
  }

  /** The caller's thread; another resource's thread is "not found", as if it did not exist. */
  private async ownThread({ threadId, resource }: RequestContext): Promise<ThreadRecord> {
    const thread = await this.store.getThread(threadId);
    if (!thread || (thread.resourceId ?? LOCAL_RESOURCE) !== resource) {
      throw new HttpError(404, 'not-found', `There is no thread "${threadId}"`);
    }
    return thread;
  }

  private async listThreads({ response, url, resource }: RequestContext): Promise<void> {
    const limitParameter = url.searchParams.get('limit');
    const limit = limitParameter === null ? 20 : limitSchema.safeParse(limitParameter).data;
    if (limit === undefined)
      throw new HttpError(400, 'invalid-argument', 'limit must be a whole number from 1 to 100');
    const cursor = url.searchParams.get('cursor') ?? undefined;
    const page = await this.store.listThreads({ resourceId: resource, limit, ...(cursor ? { cursor } : {}) });
    sendJson(response, 200, { threads: page.items, nextCursor: page.nextCursor ?? null });
  }

  private async createThread({ request, response, resource }: RequestContext): Promise<void> {
    const body = parseBody(createThreadBodySchema, await readJsonBody(request, this.bodyLimits));
    // Thread ids are shown to clients: random, not sequential.
    const thread = await this.store.createThread({
      id: randomUUID(),
      resourceId: resource,
      ...(body?.metadata ? { metadata: body.metadata } : {}),
    });
    sendJson(response, 201, { thread });
  }

  private async getThread(context: RequestContext): Promise<void> {
    const thread = await this.ownThread(context);
    const run = await this.store.getLatestRun(thread.id);
    sendJson(context.response, 200, {
      thread,
      latestRun: run
        ? {
            runId: run.identity.runId,
            status: run.status,
            termination: run.termination ?? null,
            openTickets: run.openTickets,
          }
        : null,
    });
  }

  private async listMessages(context: RequestContext): Promise<void> {
    const thread = await this.ownThread(context);
    const messages = await this.store.listMessages(thread.id);
    sendJson(context.response, 200, { messages });
  }

  private async postMessage(context: RequestContext): Promise<void> {
    const body = parseBody(messageBodySchema, await readJsonBody(context.request, this.bodyLimits));
    const thread = await this.ownThread(context);
    await this.front.send(
      { response: context.response, threadId: thread.id, resource: context.resource },
      body.text,
    );
  }

  /** Answers open tickets: streams the resumed run, or returns JSON while tickets are still open. */
  private async postDecisions(context: RequestContext): Promise<void> {
    const body = parseBody(decisionsBodySchema, await readJsonBody(context.request, this.bodyLimits));
    const thread = await this.ownThread(context);
    const decisions = body.decisions.map((decision) => ({
      ...decision,
      decisionId: decision.decisionId ?? createId(),
    })) as ResumeDecision[];
    await this.front.decide(
      { response: context.response, threadId: thread.id, resource: context.resource },
      decisions,
    );
  }

  private async cancel(context: RequestContext): Promise<void> {
    const thread = await this.ownThread(context);
    await this.front.cancel({ response: context.response, threadId: thread.id, resource: context.resource });
  }

  /** A run's events after the `Last-Event-ID` header (or `?after=`): how a dropped stream resumes. */
  private async followRun(context: RequestContext): Promise<void> {
    const thread = await this.ownThread(context);
    const header = context.request.headers['last-event-id'];
    const lastEventId =
      (Array.isArray(header) ? header[0] : header) ?? context.url.searchParams.get('after') ?? undefined;
    await this.front.follow(
      { response: context.response, threadId: thread.id, resource: context.resource },
      context.runId,
      lastEventId,
    );
  }
}

function decodeId(encoded: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw new HttpError(400, 'invalid-argument', `"${encoded}" is not a valid thread id`);
  }
}

function errorBody(error: HttpError) {
  return { error: { code: error.code, message: error.message } };
}
