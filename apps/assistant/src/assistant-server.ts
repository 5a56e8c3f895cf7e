import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  jsonObjectSchema,
  type LunationStore,
  type ResumeDecision,
  resumeDecisionSchema,
  type ThreadRecord,
} from '@lunation/contract';
import { type AgentRuntime, createId, type RunHandle } from '@lunation/runtime';
import { z } from 'zod';
import { HttpError, toHttpError } from './http-error.js';
import {
  type BodyLimits,
  CLIENT_CLOSED,
  parseBody,
  readJsonBody,
  sendEventStream,
  sendJson,
} from './http-io.js';
import { LOCAL_RESOURCE, TokenAuth } from './token-auth.js';

export interface AssistantServerOptions {
  runtime: AgentRuntime;
  store: LunationStore;
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
}

type Handler = (context: RequestContext) => Promise<void>;

const createThreadBodySchema = z.object({ metadata: jsonObjectSchema.optional() }).strict().optional();
const messageBodySchema = z.object({ text: z.string().min(1) }).strict();
const decisionsBodySchema = z
  .object({ decisions: z.array(resumeDecisionSchema.partial({ decisionId: true })).min(1) })
  .strict();
const limitSchema = z.coerce.number().int().min(1).max(100);

/**
 * The assistant's HTTP API on node:http: threads, messages streamed as Server-Sent Events, decisions,
 * history and cancellation. Each bearer token sees only its own resource's threads.
 */
export class AssistantServer {
  readonly server: Server;
  private readonly runtime: AgentRuntime;
  private readonly store: LunationStore;
  private readonly auth: TokenAuth;
  private readonly bodyLimits: BodyLimits;
  private readonly heartbeatMs: number;
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
  ];

  constructor(options: AssistantServerOptions) {
    this.runtime = options.runtime;
    this.store = options.store;
    this.auth = new TokenAuth(options.tokens ?? new Map());
    this.bodyLimits = { maxBytes: options.maxBodyBytes ?? 1_048_576, maxDepth: options.maxJsonDepth ?? 64 };
    this.heartbeatMs = options.heartbeatMs ?? 15_000;
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
   * Stops accepting connections, cancels the runtime's active runs (each ends cleanly and is checkpointed), waits
   * for their streams to finish, then closes the remaining connections. The store is left open.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      await this.runtime.cancelAll('the server is shutting down');
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
      const encodedId = route.path.exec(url.pathname)?.[1];
      await handler({ request, response, url, resource, threadId: encodedId ? decodeId(encodedId) : '' });
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
    const run = await this.runtime.run({
      threadId: thread.id,
      input: body.text,
      resourceId: context.resource,
    });
    await this.stream(context.response, run);
  }

  /** Answers open tickets: streams the resumed run, or returns JSON while tickets are still open. */
  private async postDecisions(context: RequestContext): Promise<void> {
    const body = parseBody(decisionsBodySchema, await readJsonBody(context.request, this.bodyLimits));
    assertOneDecisionPerTicket(body.decisions);
    const thread = await this.ownThread(context);
    const decisions: ResumeDecision[] = body.decisions.map((decision) => ({
      ...decision,
      decisionId: decision.decisionId ?? createId(),
    }));
    const outcome = await this.runtime.sendDecisions(thread.id, decisions);
    if (outcome.run) {
      await this.stream(context.response, outcome.run);
      return;
    }
    const { applied, ignored, openTickets } = outcome;
    sendJson(context.response, 200, { applied, ignored, openTickets });
  }

  private async cancel(context: RequestContext): Promise<void> {
    const thread = await this.ownThread(context);
    sendJson(context.response, 200, { cancelled: this.runtime.cancel(thread.id, 'cancelled by the client') });
  }

  private async stream(response: ServerResponse, run: RunHandle): Promise<void> {
    if (this.closing) run.cancel('the server is shutting down');
    await sendEventStream(response, run.events, this.heartbeatMs);
  }
}

function decodeId(encoded: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw new HttpError(400, 'invalid-argument', `"${encoded}" is not a valid thread id`);
  }
}

/** Two decisions for one ticket (say resume and cancel) contradict each other: the request is refused whole. */
function assertOneDecisionPerTicket(decisions: ReadonlyArray<{ ticketId: string }>): void {
  const firstIndex = new Map<string, number>();
  for (const [index, { ticketId }] of decisions.entries()) {
    const earlier = firstIndex.get(ticketId);
    if (earlier !== undefined) {
      throw new HttpError(
        400,
        'decision-invalid',
        `Decisions #${earlier} and #${index} both decide ticket "${ticketId}"; send one decision per ticket`,
      );
    }
    firstIndex.set(ticketId, index);
  }
}

function errorBody(error: HttpError) {
  return { error: { code: error.code, message: error.message } };
}
