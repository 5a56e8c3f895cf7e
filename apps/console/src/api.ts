import { createParser } from 'eventsource-parser';

/** An error answered by the server as `{ error: { code, message } }`, or a network failure (`status` 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** One Server-Sent Event as received: its id (when the stream has ids), name and parsed data. */
export interface StreamEvent {
  id: string | undefined;
  event: string;
  data: unknown;
}

/** The answer to a request that may stream: the events, or a JSON body. */
export type StreamAnswer =
  | { type: 'stream'; events: AsyncGenerator<StreamEvent> }
  | { type: 'json'; body: unknown };

const REQUEST_TIMEOUT_MS = 15_000;

/** The HTTP API as the console calls it: JSON requests with the bearer token, and event streams. */
export class Api {
  constructor(private readonly token: string | undefined) {}

  /** A JSON request; a 4xx/5xx answer or a network failure throws an {@link ApiError}. */
  async json<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
    const response = await this.send(path, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }

  /**
   * A request answered by an event stream (or JSON); `lastEventId` resumes a run's stream after that event.
   * `signal` detaches: the request is dropped, the run goes on.
   */
  async stream(
    path: string,
    init: { method?: string; body?: unknown; lastEventId?: string; signal?: AbortSignal } = {},
  ): Promise<StreamAnswer> {
    const response = await this.send(path, init);
    const type = response.headers.get('content-type') ?? '';
    if (!type.startsWith('text/event-stream')) return { type: 'json', body: await response.json() };
    return { type: 'stream', events: readEvents(response) };
  }

  private async send(
    path: string,
    init: { method?: string; body?: unknown; lastEventId?: string; signal?: AbortSignal },
  ): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json, text/event-stream' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    if (init.lastEventId !== undefined) headers['last-event-id'] = init.lastEventId;
    let response: Response;
    try {
      response = await fetch(path, {
        method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
        headers,
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
        ...(init.signal ? { signal: init.signal } : {}),
      });
    } catch (error) {
      if (init.signal?.aborted) throw error;
      throw new ApiError(0, 'network', `The server cannot be reached (${(error as Error).message})`);
    }
    if (response.ok) return response;
    const body = (await response.json().catch(() => undefined)) as
      | { error?: { code?: string; message?: string } }
      | undefined;
    throw new ApiError(
      response.status,
      body?.error?.code ?? 'http',
      body?.error?.message ?? `The server answered ${response.status}`,
    );
  }
}

/** Parses an event-stream body; ends when the server ends it, throws when the connection drops. */
async function* readEvents(response: Response): AsyncGenerator<StreamEvent> {
  const body = response.body;
  if (!body) return;
  const queue: StreamEvent[] = [];
  const parser = createParser({
    onEvent(message) {
      let data: unknown;
      try {
        data = JSON.parse(message.data);
      } catch {
        data = message.data;
      }
      queue.push({ id: message.id, event: message.event ?? 'message', data });
    },
  });
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      parser.feed(value);
      while (queue.length > 0) yield queue.shift()!;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
