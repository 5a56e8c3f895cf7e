import { formatIssues } from '@lunation/runtime/internal';
import type { z } from 'zod';
import { CLIENT_CLOSED, HttpError } from './http-error.js';

/** Limits on request bodies. */
export interface BodyLimits {
  /** Largest accepted body in bytes. */
  maxBytes: number;
  /** Deepest accepted nesting of arrays and objects, checked before the body is parsed. */
  maxDepth: number;
}

/**
 * A request's JSON body read within `limits` and validated by `schema` (no body is `undefined` to the schema):
 * 413/415/400 on a body too large, not JSON, nested too deep, or not matching.
 */
export async function readBody<Schema extends z.ZodType>(
  schema: Schema,
  request: Request,
  limits: BodyLimits,
): Promise<z.infer<Schema>> {
  return parseBody(schema, await readJsonBody(request, limits));
}

/** Reads and parses a JSON body within `limits`; undefined when there is no body. */
async function readJsonBody(request: Request, limits: BodyLimits): Promise<unknown> {
  const text = await readText(request, limits.maxBytes);
  if (text.trim() === '') return undefined;
  const type = request.headers.get('content-type') ?? '';
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

/** Validates a parsed body; a mismatch is a 400 naming every problem. */
function parseBody<Schema extends z.ZodType>(schema: Schema, body: unknown): z.infer<Schema> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new HttpError(400, 'invalid-argument', `Invalid request body: ${formatIssues(parsed.error)}`);
  }
  return parsed.data;
}

async function readText(request: Request, limit: number): Promise<string> {
  const body = request.body;
  if (body === null) return '';
  const reader = body.getReader();
  if (Number(request.headers.get('content-length') ?? 0) > limit) throw tooLarge(reader, limit);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let chunk: Awaited<ReturnType<typeof reader.read>>;
    try {
      chunk = await reader.read();
    } catch (error) {
      // The client hung up before sending the whole body: nobody is left to answer, and nothing is wrong here.
      throw clientClosed(error);
    }
    if (chunk.done) break;
    size += chunk.value.byteLength;
    if (size > limit) throw tooLarge(reader, limit);
    chunks.push(chunk.value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/** Lets the client finish sending (the bytes are dropped) so it can read the answer, then hangs up. */
function tooLarge(reader: ReadableStreamDefaultReader<Uint8Array>, limit: number): HttpError {
  void (async () => {
    try {
      for (;;) if ((await reader.read()).done) return;
    } catch {
      // The client gave up sending: fine.
    }
  })();
  return new HttpError(413, 'payload-too-large', `The request body is larger than ${limit} bytes`, {
    connection: 'close',
  });
}

function clientClosed(cause: unknown): HttpError {
  const error = new HttpError(
    499,
    CLIENT_CLOSED,
    'The client closed the connection before sending the whole body',
  );
  error.cause = cause;
  return error;
}

/**
 * How deeply arrays and objects nest in a JSON text (`{}` is 1, `[{}]` is 2), found by one scan of the text
 * without parsing it, so that a hostile body cannot exhaust the stack of a recursive parser or validator.
 * The text need not be valid JSON: brackets inside strings are skipped, anything else is counted as seen.
 */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === BACKSLASH) index++;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) inString = true;
    else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) depth--;
  }
  return deepest;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
