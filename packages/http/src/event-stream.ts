/** One Server-Sent Event. */
export interface ServerSentEvent {
  id?: string;
  event?: string;
  /** The data line (no newlines: JSON). */
  data: string;
}

/** Options of {@link eventStreamResponse}. */
export interface EventStreamOptions {
  /** Interval of `: keep-alive` comments. */
  heartbeatMs: number;
  /** Called when the client goes away before the end (it detaches: what it followed goes on). */
  onCancel(): void;
  /** Extra response headers. */
  headers?: Record<string, string>;
  /** Receives a promise that settles when the stream ended, however it ended. */
  track?(done: Promise<void>): void;
}

const encoder = new TextEncoder();

/**
 * A `text/event-stream` response of `events` (`id:`, `event:`, `data:` lines), with a keep-alive comment every
 * `heartbeatMs` so proxies keep an idle connection open.
 */
export function eventStreamResponse(
  events: AsyncIterable<ServerSentEvent>,
  options: EventStreamOptions,
): Response {
  const iterator = events[Symbol.asyncIterator]();
  let heartbeat: NodeJS.Timeout | undefined;
  let finished!: () => void;
  const done = new Promise<void>((resolve) => {
    finished = resolve;
  });
  options.track?.(done);
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      heartbeat = setInterval(() => {
        try {
          controller.enqueue(encoder.encode(': keep-alive\n\n'));
        } catch {
          // Closed meanwhile.
        }
      }, options.heartbeatMs);
      void (async () => {
        try {
          for (;;) {
            const next = await iterator.next();
            if (next.done || cancelled) break;
            controller.enqueue(encoder.encode(format(next.value)));
          }
          if (!cancelled) controller.close();
        } catch (error) {
          if (!cancelled) controller.error(error);
        } finally {
          clearInterval(heartbeat);
          finished();
        }
      })();
    },
    cancel() {
      cancelled = true;
      clearInterval(heartbeat);
      options.onCancel();
      void iterator.return?.();
    },
  });
  return new Response(body, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      ...options.headers,
    },
  });
}

function format({ id, event, data }: ServerSentEvent): string {
  return `${id === undefined ? '' : `id: ${id}\n`}${event === undefined ? '' : `event: ${event}\n`}data: ${data}\n\n`;
}
