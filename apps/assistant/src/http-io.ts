import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AgentEvent, RunEventRecord } from '@lunation/contract';
import { formatIssues } from '@lunation/runtime/internal';
import type { z } from 'zod';
import { HttpError } from './http-error.js';
import { jsonNestingDepth } from './json-depth.js';

/** Limits on request bodies. */
export interface BodyLimits {
  /** Largest accepted body in bytes. */
  maxBytes: number;
  /** Deepest accepted nesting of arrays and objects, checked before the body is parsed. */
  maxDepth: number;
}

/** Reads and parses a JSON body within `limits`; undefined when there is no body. */
export async function readJsonBody(request: IncomingMessage, limits: BodyLimits): Promise<unknown> {
  const text = (await readBody(request, limits.maxBytes)).toString('utf8');
  if (text.trim() === '') return undefined;
  const type = request.headers['content-type'] ?? '';
  if (!/^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(type)) {
    throw new HttpError(
      415,
      'unsupported-media-type',
      'Send the body as JSON with "Content-Type: application/json"',
    );
  }
  const depth = jsonNestingDepth(text);
  if (depth > limits.maxDepth) {
    throw new HttpError(
      400,
      'nesting-too-deep',
      `The request body nests arrays and objects ${depth} levels deep; at most ${limits.maxDepth} are accepted`,
    );
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HttpError(
      400,
      'invalid-json',
      `The request body is not valid JSON: ${(error as Error).message}`,
    );
  }
}

function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () => {
    // Let the client finish sending (the bytes are dropped) so it can read the answer, then hang up.
    request.resume();
    return new HttpError(413, 'payload-too-large', `The request body is larger than ${limit} bytes`, {
      connection: 'close',
    });
  };
  if (Number(request.headers['content-length'] ?? 0) > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      request.off('data', onData);
      reject(tooLarge());
    };
    request.on('data', onData);
    request.once('end', () => resolve(Buffer.concat(chunks)));
    // The client hung up before sending the whole body: nobody is left to answer, and nothing is wrong here.
    request.once('error', (error) => reject(clientClosed(error)));
  });
}

function clientClosed(cause: Error): HttpError {
  const error = new HttpError(
    499,
    CLIENT_CLOSED,
    'The client closed the connection before sending the whole body',
  );
  error.cause = cause;
  return error;
}

/** The code of the error raised when the client hangs up mid-body (499, as nginx logs it). */
export const CLIENT_CLOSED = 'client-closed';

/** Validates a parsed body; a mismatch is a 400 naming every problem. */
export function parseBody<Schema extends z.ZodType>(schema: Schema, body: unknown): z.infer<Schema> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new HttpError(400, 'invalid-argument', `Invalid request body: ${formatIssues(parsed.error)}`);
  }
  return parsed.data;
}

export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  response.end(text);
}

/**
 * Streams events as Server-Sent Events (`event: <type>`, `data: <json>`) until the stream ends, with a comment
 * line every `heartbeatMs` to keep proxies from closing an idle connection. A client that goes away stops
 * the writing, not the run.
 */
export async function sendEventStream(
  response: ServerResponse,
  events: AsyncIterable<AgentEvent>,
  heartbeatMs: number,
): Promise<void> {
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  const heartbeat = setInterval(() => response.write(': keep-alive\n\n'), heartbeatMs);
  try {
    for await (const event of events) {
      if (response.destroyed) break;
      response.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    }
  } finally {
    clearInterval(heartbeat);
    response.end();
  }
}

/**
 * Streams a run's logged events as Server-Sent Events with ids (`id: <event id>`), so a client that reconnects
 * with `Last-Event-ID` (here or on another server of the fleet) resumes right after the last one it got. `first`
 * is sent before them, without an id. A keep-alive comment goes out every `heartbeatMs`. The stream ends with
 * the records or when the client goes away (`detach` aborts then: the run goes on).
 */
export async function sendRecordStream(
  response: ServerResponse,
  records: AsyncIterable<RunEventRecord>,
  options: { heartbeatMs: number; detach: AbortController; first?: { event: string; data: unknown } },
): Promise<void> {
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  const onClose = () => options.detach.abort();
  response.once('close', onClose);
  const heartbeat = setInterval(() => response.write(': keep-alive\n\n'), options.heartbeatMs);
  try {
    if (options.first)
      response.write(`event: ${options.first.event}\ndata: ${JSON.stringify(options.first.data)}\n\n`);
    for await (const { id, event } of records) {
      if (response.destroyed) break;
      response.write(`id: ${id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    }
  } finally {
    clearInterval(heartbeat);
    response.off('close', onClose);
    response.end();
  }
}
