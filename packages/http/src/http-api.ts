import { randomUUID } from 'node:crypto';
import {
  jsonObjectSchema,
  jsonValueSchema,
  type LunationStore,
  type ResumeDecision,
  type ThreadRecord,
} from '@lunation/contract';
import { ownsThread } from '@lunation/runtime/internal';
import { z } from 'zod';
import type { ApiParts, RouteContext } from './api-parts.js';
import { chatMessages, chatStop, chatStream, postChat } from './chat-route.js';
import { Cors, type CorsOptions } from './cors.js';
import { isDynamicToolName } from './dynamic-tool-name.js';
import { eventStreamResponse } from './event-stream.js';
import { forkRoute, threadCheckpoints } from './fork-route.js';
import { isRunStream, type RunFront, type RunStream } from './front.js';
import {
  CLIENT_CLOSED,
  errorResponse,
  HttpError,
  jsonResponse,
  noThread,
  toHttpError,
} from './http-error.js';
import { readBody } from './request-body.js';
import { runSummary } from './run-summary.js';
import { StartingSends } from './starting-sends.js';
import { inbox, searchThreads } from './thread-queries.js';
import { buildTimeline, type RunTimeline, type TimelineEntry, type TimelineWorker } from './timeline.js';
import { type Authenticate, LOCAL_RESOURCE, threadCaller } from './token-auth.js';

/** Options of {@link createHttpApi}. */
export interface HttpApiOptions {
  /** Where threads, messages and runs are read (the store the runtime or the fleet writes). */
  store: LunationStore;
  /** Where runs go: {@link LocalFront} (this process) or {@link FleetFront} (a fleet's workers). */
  front: RunFront;
  /** The caller's resource id from the request; undefined answers 401. Absent: every caller is `local`. */
  authenticate?: Authenticate;
  /** The path the routes live under, e.g. `/api`. @default '' */
  basePath?: string;
  /** Largest accepted request body. @default 1048576 (1 MiB) */
  maxBodyBytes?: number;
  /** Deepest accepted nesting of arrays and objects in a request body. @default 64 */
  maxJsonDepth?: number;
  /** Interval of SSE keep-alive comments. @default 15000 */
  heartbeatMs?: number;
  /** Where unexpected errors (500) are reported. @default console.error */
  logError?: (error: unknown) => void;
  /**
   * Which tools' parts the `/chat` routes send as `dynamic-tool` (tools a page cannot know in advance) rather than
   * the AI SDK's static `tool-<name>` parts. @default {@link isDynamicToolName} (MCP tools, named `<server>__<tool>`)
   */
  dynamicTool?: (toolName: string) => boolean;
  /** Cross-origin requests from pages on other origins (answers preflights). Absent: same-origin only. */
  cors?: CorsOptions;
  /**
   * How long after a run ended `GET /chat/:id/stream` still answers its whole message (a page that read its
   * history while the run went on, and asks to resume after it ended, holds only a part of it). 0: never.
   * @default 30000
   */
  chatReplayMs?: number;
  /**
   * Whether run timelines name the runtime processes by their lease owner (which may hold a host name or a
   * folder); when false, each is `process 1`, `process 2`, … in order of appearance in the run.
   * @default true without `authenticate`, false with it (tenants do not see the servers' names)
   */
  showProcessNames?: boolean;
}

/** Lunation's HTTP API: a web-standard handler and its shutdown. */
export interface HttpApi {
  /** Answers one request (any path: unknown ones answer 404 `not-found`). */
  handle(request: Request): Promise<Response>;
  /**
   * Refuses new requests (503 `shutting-down`), ends what the front runs (local runs are cancelled, each ending
   * cleanly and checkpointed; a fleet's streams detach, their runs go on) and waits for the open streams to end.
   */
  close(): Promise<void>;
}

/** Creates the HTTP API; see the package README for the routes. */
export function createHttpApi(options: HttpApiOptions): HttpApi {
  const api = new LunationHttpApi(options);
  return { handle: (request) => api.handle(request), close: () => api.close() };
}

type Handler = (context: RouteContext) => Promise<Response>;

const createThreadBodySchema = z.object({ metadata: jsonObjectSchema.optional() }).strict().optional();
const updateThreadBodySchema = z
  .object({ metadata: z.record(z.string(), jsonValueSchema.nullable()) })
  .strict();
/** A run id a client chooses: a retried send with the same id (on any server) starts one run. */
const clientRunIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, 'a run id is 1–128 letters, digits, ".", "_", ":" or "-"');
const messageBodySchema = z.object({ text: z.string().min(1), runId: clientRunIdSchema.optional() }).strict();
const cancelBodySchema = z.object({ runId: clientRunIdSchema.optional() }).strict().optional();
const decisionsBodySchema = z
  // Only what the server needs to fill in decision ids: the runtime checks each decision at its boundary.
  .object({ decisions: z.array(z.looseObject({ decisionId: z.string().min(1).optional() })).min(1) })
  .strict();
const limitSchema = z.coerce.number().int().min(1).max(100);

class LunationHttpApi {
  private readonly parts: ApiParts;
  private readonly store: LunationStore;
  private readonly front: RunFront;
  private readonly authenticate: Authenticate | undefined;
  private readonly basePath: string;
  private readonly logError: (error: unknown) => void;
  private readonly streams = new Set<Promise<void>>();
  private closing: Promise<void> | undefined;
  private readonly routes: Array<{ path: RegExp; methods: Record<string, Handler> }>;
  private readonly cors: Cors | undefined;
  private readonly showProcessNames: boolean;

  constructor(options: HttpApiOptions) {
    this.store = options.store;
    this.showProcessNames = options.showProcessNames ?? options.authenticate === undefined;
    this.front = options.front;
    this.authenticate = options.authenticate;
    this.cors = options.cors ? new Cors(options.cors) : undefined;
    this.basePath = (options.basePath ?? '').replace(/\/$/, '');
    this.logError = options.logError ?? ((error) => console.error(error));
    const heartbeatMs = options.heartbeatMs ?? 15_000;
    this.parts = {
      store: this.store,
      front: this.front,
      bodyLimits: { maxBytes: options.maxBodyBytes ?? 1_048_576, maxDepth: options.maxJsonDepth ?? 64 },
      sse: (events, detach, headers) =>
        eventStreamResponse(events, {
          heartbeatMs,
          onCancel: detach,
          ...(headers ? { headers } : {}),
          track: (done) => {
            this.streams.add(done);
            void done.finally(() => this.streams.delete(done));
          },
        }),
      ownThread: (threadId, resource) => this.ownThread(threadId, resource),
      dynamicTool: options.dynamicTool ?? isDynamicToolName,
      chatReplayMs: options.chatReplayMs ?? 30_000,
      starting: new StartingSends(),
    };
    this.routes = [
      {
        path: /^\/threads\/?$/,
        methods: {
          GET: (context) => this.listThreads(context),
          POST: (context) => this.createThread(context),
        },
      },
      {
        path: /^\/threads\/([^/]+)$/,
        methods: {
          GET: (context) => this.getThread(context),
          PATCH: (context) => this.updateThread(context),
          DELETE: (context) => this.deleteThread(context),
        },
      },
      {
        path: /^\/threads\/([^/]+)\/messages$/,
        methods: {
          GET: (context) => this.listMessages(context),
          POST: (context) => this.postMessage(context),
        },
      },
      {
        path: /^\/threads\/([^/]+)\/decisions$/,
        methods: { POST: (context) => this.postDecisions(context) },
      },
      { path: /^\/threads\/([^/]+)\/cancel$/, methods: { POST: (context) => this.cancel(context) } },
      { path: /^\/threads\/([^/]+)\/resubmit$/, methods: { POST: (context) => this.resubmit(context) } },
      {
        path: /^\/threads\/([^/]+)\/checkpoints$/,
        methods: { GET: (context) => threadCheckpoints(this.parts, context) },
      },
      { path: /^\/threads\/([^/]+)\/fork$/, methods: { POST: (context) => forkRoute(this.parts, context) } },
      { path: /^\/dead-letters$/, methods: { GET: (context) => this.deadLetters(context) } },
      { path: /^\/threads\/([^/]+)\/runs$/, methods: { GET: (context) => this.listRuns(context) } },
      {
        path: /^\/threads\/([^/]+)\/runs\/([^/]+)\/events$/,
        methods: { GET: (context) => this.followRun(context) },
      },
      {
        path: /^\/threads\/([^/]+)\/runs\/([^/]+)\/timeline$/,
        methods: { GET: (context) => this.timeline(context) },
      },
      { path: /^\/inbox$/, methods: { GET: (context) => this.inbox(context) } },
      { path: /^\/chat$/, methods: { POST: (context) => postChat(this.parts, context) } },
      { path: /^\/chat\/([^/]+)\/stream$/, methods: { GET: (context) => chatStream(this.parts, context) } },
      {
        path: /^\/chat\/([^/]+)\/messages$/,
        methods: { GET: (context) => chatMessages(this.parts, context) },
      },
      { path: /^\/chat\/([^/]+)\/stop$/, methods: { POST: (context) => chatStop(this.parts, context) } },
    ];
  }

  async handle(request: Request): Promise<Response> {
    const response = await this.answer(request);
    return this.cors ? this.cors.mark(request, response) : response;
  }

  private async answer(request: Request): Promise<Response> {
    try {
      if (this.closing) {
        throw new HttpError(503, 'shutting-down', 'The server is shutting down; retry shortly', {
          connection: 'close',
        });
      }
      const url = new URL(request.url);
      const path = url.pathname.startsWith(this.basePath)
        ? url.pathname.slice(this.basePath.length)
        : undefined;
      const route =
        path === undefined ? undefined : this.routes.find((candidate) => candidate.path.test(path));
      if (!route || path === undefined) throw new HttpError(404, 'not-found', `No route ${url.pathname}`);
      // A preflight carries no credentials: it is answered before authentication.
      if (this.cors && Cors.isPreflight(request))
        return this.cors.preflight(request, Object.keys(route.methods));
      const resource = await this.callerOf(request);
      const handler = Object.hasOwn(route.methods, request.method)
        ? route.methods[request.method]
        : undefined;
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
      const params = (route.path.exec(path) ?? []).slice(1).map(decodeId);
      return await handler({ request, url, resource, params });
    } catch (error) {
      const httpError = toHttpError(error);
      if (httpError.code !== CLIENT_CLOSED && httpError.status >= 500 && httpError.code === 'internal') {
        this.logError(error);
      }
      return errorResponse(httpError);
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.front.close();
      await Promise.allSettled([...this.streams]);
    })();
    return this.closing;
  }

  private async callerOf(request: Request): Promise<string> {
    if (!this.authenticate) return LOCAL_RESOURCE;
    const resource = await this.authenticate(request);
    if (resource === undefined) {
      throw new HttpError(401, 'unauthorized', 'Send a valid token as "Authorization: Bearer <token>"', {
        'www-authenticate': 'Bearer',
      });
    }
    return resource;
  }

  private async ownThread(threadId: string, resource: string): Promise<ThreadRecord> {
    const thread = await this.store.getThread(threadId);
    if (!thread || !ownsThread(thread, threadCaller(resource))) throw noThread(threadId);
    return thread;
  }

  private async listThreads({ url, resource }: RouteContext): Promise<Response> {
    const limitParameter = url.searchParams.get('limit');
    const limit = limitParameter === null ? 20 : limitSchema.safeParse(limitParameter).data;
    if (limit === undefined)
      throw new HttpError(400, 'invalid-argument', 'limit must be a whole number from 1 to 100');
    const cursor = url.searchParams.get('cursor') ?? undefined;
    const search = url.searchParams.get('search')?.trim();
    if (search) {
      const page = await searchThreads(this.store, { resourceId: resource, search, limit, cursor });
      return jsonResponse(200, { threads: page.threads, nextCursor: page.nextCursor ?? null });
    }
    const page = await this.store.listThreads({ resourceId: resource, limit, ...(cursor ? { cursor } : {}) });
    return jsonResponse(200, { threads: page.items, nextCursor: page.nextCursor ?? null });
  }

  private async createThread({ request, resource }: RouteContext): Promise<Response> {
    const body = await readBody(createThreadBodySchema, request, this.parts.bodyLimits);
    // Thread ids are shown to clients: random, not sequential.
    const thread = await this.store.createThread({
      id: randomUUID(),
      resourceId: resource,
      ...(body?.metadata ? { metadata: body.metadata } : {}),
    });
    return jsonResponse(201, { thread });
  }

  private async getThread({ params, resource }: RouteContext): Promise<Response> {
    const thread = await this.ownThread(params[0]!, resource);
    const run = await this.store.getLatestRun(thread.id);
    return jsonResponse(200, {
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

  /** Merges `metadata` into the thread's (a key set to null is removed): how a client renames a thread. */
  private async updateThread({ request, params, resource }: RouteContext): Promise<Response> {
    const body = await readBody(updateThreadBodySchema, request, this.parts.bodyLimits);
    const thread = await this.ownThread(params[0]!, resource);
    const metadata: Record<string, unknown> = { ...thread.metadata };
    for (const [key, value] of Object.entries(body.metadata)) {
      if (value === null) delete metadata[key];
      else metadata[key] = value;
    }
    return jsonResponse(200, { thread: await this.store.updateThreadMetadata(thread.id, metadata) });
  }

  private async deleteThread({ params, resource }: RouteContext): Promise<Response> {
    const thread = await this.ownThread(params[0]!, resource);
    if (this.front.deleteThread) {
      await this.front.deleteThread({ threadId: thread.id, resource });
      return jsonResponse(200, { deleted: true });
    }
    const lease = await this.store.getLease(thread.id);
    if (lease && lease.expiresAt > Date.now()) {
      throw new HttpError(
        409,
        'thread-busy',
        `Thread "${thread.id}" has an active run (run ${lease.runId}); cancel it, then delete the thread`,
      );
    }
    await this.store.deleteThread(thread.id);
    return jsonResponse(200, { deleted: true });
  }

  private async listMessages({ params, resource }: RouteContext): Promise<Response> {
    const thread = await this.ownThread(params[0]!, resource);
    return jsonResponse(200, { messages: await this.store.listMessages(thread.id) });
  }

  private async postMessage({ request, params, resource }: RouteContext): Promise<Response> {
    const body = await readBody(messageBodySchema, request, this.parts.bodyLimits);
    const thread = await this.ownThread(params[0]!, resource);
    const send = body.runId === undefined ? {} : { runId: body.runId };
    return this.agentEvents(await this.front.send({ threadId: thread.id, resource }, body.text, send));
  }

  /** Answers open tickets: streams the resumed run, or answers JSON while tickets are still open. */
  private async postDecisions({ request, params, resource }: RouteContext): Promise<Response> {
    const body = await readBody(decisionsBodySchema, request, this.parts.bodyLimits);
    const decisions = body.decisions.map((decision) => ({
      ...decision,
      decisionId: decision.decisionId ?? randomUUID(),
    })) as ResumeDecision[];
    // The front checks that the caller owns the thread, with the thread's one read.
    const answer = await this.front.decide({ threadId: params[0]!, resource }, decisions);
    return isRunStream(answer) ? this.agentEvents(answer) : jsonResponse(answer.status, answer.body);
  }

  private async cancel({ request, params, resource }: RouteContext): Promise<Response> {
    const body = await readBody(cancelBodySchema, request, this.parts.bodyLimits);
    const thread = await this.ownThread(params[0]!, resource);
    const answer = await this.front.cancel({ threadId: thread.id, resource }, body?.runId);
    return jsonResponse(answer.status, answer.body);
  }

  /** A fleet's dead-lettered threads of the caller; a server that runs threads itself has none. */
  private async deadLetters({ resource }: RouteContext): Promise<Response> {
    if (!this.front.deadLetters) throw notFleet();
    const answer = await this.front.deadLetters(resource);
    return jsonResponse(answer.status, answer.body);
  }

  /** Runs a dead-lettered thread of the caller again, its kept submissions in order. */
  private async resubmit({ params, resource }: RouteContext): Promise<Response> {
    if (!this.front.resubmit) throw notFleet();
    const thread = await this.ownThread(params[0]!, resource);
    const answer = await this.front.resubmit({ threadId: thread.id, resource });
    return jsonResponse(answer.status, answer.body);
  }

  private async listRuns({ url, params, resource }: RouteContext): Promise<Response> {
    const thread = await this.ownThread(params[0]!, resource);
    const limitParameter = url.searchParams.get('limit');
    const limit = limitParameter === null ? 20 : limitSchema.safeParse(limitParameter).data;
    if (limit === undefined)
      throw new HttpError(400, 'invalid-argument', 'limit must be a whole number from 1 to 100');
    const cursor = url.searchParams.get('cursor') ?? undefined;
    const page = await this.store.listRuns(thread.id, { limit, ...(cursor ? { cursor } : {}) });
    return jsonResponse(200, { runs: page.items.map(runSummary), nextCursor: page.nextCursor ?? null });
  }

  /** A run's events after the `Last-Event-ID` header (or `?after=`): how a dropped stream resumes. */
  private async followRun({ request, url, params, resource }: RouteContext): Promise<Response> {
    const thread = await this.ownThread(params[0]!, resource);
    const lastEventId = request.headers.get('last-event-id') ?? url.searchParams.get('after') ?? undefined;
    return this.agentEvents(
      await this.front.follow({ threadId: thread.id, resource }, params[1]!, lastEventId),
    );
  }

  private async timeline({ params, resource }: RouteContext): Promise<Response> {
    const thread = await this.ownThread(params[0]!, resource);
    const run = await this.store.getRun(params[1]!);
    if (run?.identity.threadId !== thread.id) {
      throw new HttpError(404, 'not-found', `Thread "${thread.id}" has no run "${params[1]}"`);
    }
    const timeline = await buildTimeline(this.store, run);
    return jsonResponse(200, this.showProcessNames ? timeline : withoutProcessNames(timeline));
  }

  private async inbox({ resource }: RouteContext): Promise<Response> {
    return jsonResponse(200, { threads: await inbox(this.store, resource) });
  }

  /** A run's events as SSE, each with its id; a fleet's `run-submitted` first, without one. */
  private agentEvents(stream: RunStream): Response {
    return this.parts.sse(
      (async function* () {
        if (stream.first) yield { event: stream.first.event, data: JSON.stringify(stream.first.data) };
        for await (const { id, event } of stream.records)
          yield { id, event: event.type, data: JSON.stringify(event) };
      })(),
      () => stream.detach(),
    );
  }
}

function notFleet(): HttpError {
  return new HttpError(
    404,
    'not-found',
    'This server runs threads itself and keeps no dead letters; a fleet server (`--dispatch`) has them',
  );
}

function decodeId(encoded: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw new HttpError(400, 'invalid-argument', `"${encoded}" is not a valid thread id`);
  }
}

/** The timeline with each lease owner replaced by `process N` (N in order of first appearance in the run). */
function withoutProcessNames(timeline: RunTimeline): RunTimeline {
  const names = new Map<string, string>();
  const rename = (worker: TimelineWorker): TimelineWorker => {
    let name = names.get(worker.owner);
    if (name === undefined) {
      name = `process ${names.size + 1}`;
      names.set(worker.owner, name);
    }
    return { owner: name, incarnation: worker.incarnation };
  };
  const workers = timeline.workers.map(rename);
  const entries = timeline.entries.map((entry): TimelineEntry => {
    if (entry.kind === 'lease-takeover') return { ...entry, from: rename(entry.from), to: rename(entry.to) };
    if ('worker' in entry) return { ...entry, worker: rename(entry.worker) };
    return entry;
  });
  return { ...timeline, entries, workers };
}
