import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A piece of a response body, or a pause between pieces. */
export type HttpBodyStep = string | { delayMs: number };

/** One HTTP response, exactly as the server sends it. */
export interface HttpResponseScript {
  status: number;
  headers?: Record<string, string>;
  /** The body: one string, or pieces written (and flushed) one by one. */
  body?: string | readonly HttpBodyStep[];
  /**
   * How the response ends after the body: `end` finishes it normally, `reset` destroys the connection
   * (the client sees a cut stream), `hang` keeps it open until the client leaves or the server stops.
   * @default 'end'
   */
  ending?: 'end' | 'reset' | 'hang';
  /** Wait this long before sending the status line and headers. */
  headersDelayMs?: number;
}

/** How a served response ended: normally, reset by the server, or closed by the client first. */
export type ResponseOutcome = 'completed' | 'reset' | 'client-closed';

/** A request the server received. */
export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. `/v1/chat/completions`. */
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  rawBody: string;
  /** The parsed JSON body, or `undefined` when the body is not JSON. */
  body: unknown;
  /** Settles when the response ended. */
  outcome: Promise<ResponseOutcome>;
}

/** Computes a response from the request; used when the queue is empty. */
export type ScriptedHandler = (request: RecordedRequest) => HttpResponseScript | Promise<HttpResponseScript>;

/**
 * A local HTTP server that records every request and answers with scripted responses, in order.
 *
 * @example
 * const server = new ScriptedServer();
 * const baseURL = await server.start();
 * server.enqueue({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: ['data: {}\n\n'] });
 * // ... point the SDK at baseURL, then assert on server.requests
 * await server.stop();
 */
export class ScriptedServer {
  /** Every request received since `start()` or the last `reset()`, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  #queue: HttpResponseScript[] = [];
  #handler: ScriptedHandler | undefined;
  #server: Server | undefined;
  #url: string | undefined;

  /** The server's origin, e.g. `http://127.0.0.1:53121`. */
  get url(): string {
    if (this.#url === undefined) throw new Error('ScriptedServer is not started; await server.start() first');
    return this.#url;
  }

  /** Scripted responses not served yet. */
  get pending(): number {
    return this.#queue.length;
  }

  /** Listens on a free port of 127.0.0.1 and returns the origin. */
  async start(): Promise<string> {
    if (this.#url !== undefined) return this.#url;
    const server = createServer((request, response) => {
      void this.#serve(request, response);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.#server = server;
    const { port } = server.address() as AddressInfo;
    this.#url = `http://127.0.0.1:${port}`;
    return this.#url;
  }

  /** Closes every connection (including hanging responses) and stops listening. */
  async stop(): Promise<void> {
    const server = this.#server;
    if (server === undefined) return;
    this.#server = undefined;
    this.#url = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Adds responses to serve, in order, one per request. */
  enqueue(...responses: HttpResponseScript[]): this {
    this.#queue.push(...responses);
    return this;
  }

  /** Answers requests with `handler` whenever the queue is empty. */
  handle(handler: ScriptedHandler | undefined): this {
    this.#handler = handler;
    return this;
  }

  /** Forgets recorded requests, queued responses and the handler. */
  reset(): void {
    this.requests.length = 0;
    this.#queue = [];
    this.#handler = undefined;
  }

  async #serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let settle!: (outcome: ResponseOutcome) => void;
    const outcome = new Promise<ResponseOutcome>((resolve) => {
      settle = resolve;
    });
    let serverReset = false;
    response.on('close', () => {
      if (serverReset) settle('reset');
      else settle(response.writableFinished ? 'completed' : 'client-closed');
    });

    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const recorded: RecordedRequest = {
      method: request.method ?? 'GET',
      path: request.url ?? '/',
      headers: flattenHeaders(request.headers),
      rawBody,
      body: parseJson(rawBody),
      outcome,
    };
    this.requests.push(recorded);

    const script = this.#queue.shift() ?? (await this.#handler?.(recorded)) ?? noScriptLeft(recorded);
    if (script.headersDelayMs !== undefined) await delay(script.headersDelayMs);
    if (response.destroyed) return;

    const body = script.body ?? '';
    const ending = script.ending ?? 'end';
    if (typeof body === 'string' && ending === 'end') {
      response.writeHead(script.status, script.headers);
      response.end(body);
      return;
    }

    response.writeHead(script.status, script.headers);
    response.flushHeaders();
    for (const step of typeof body === 'string' ? [body] : body) {
      if (response.destroyed) return;
      if (typeof step === 'string') {
        if (step !== '') await write(response, step);
      } else {
        await delay(step.delayMs);
      }
    }
    if (response.destroyed) return;
    if (ending === 'end') {
      response.end();
    } else if (ending === 'reset') {
      // Let the written bytes reach the client before the connection goes away.
      await delay(5);
      serverReset = true;
      response.socket?.destroy();
      response.destroy();
    }
    // 'hang': leave the response open; stop() or the client closes it.
  }
}

function noScriptLeft(request: RecordedRequest): HttpResponseScript {
  return {
    status: 500,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      error: `ScriptedServer has no scripted response left for ${request.method} ${request.path}; enqueue one more`,
    }),
  };
}

function flattenHeaders(headers: IncomingMessage['headers']): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function write(response: ServerResponse, chunk: string): Promise<void> {
  return new Promise((resolve) => {
    response.write(chunk, () => resolve());
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
