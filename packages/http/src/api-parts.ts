import type { LunationStore, ThreadRecord } from '@lunation/contract';
import type { ServerSentEvent } from './event-stream.js';
import type { RunFront } from './front.js';
import type { BodyLimits } from './request-body.js';
import type { StartingSends } from './starting-sends.js';

// What every route of the HTTP API receives: the request as it sees it and the parts the routes share. Its own
// file so that the route modules (the API class, the chat routes) depend on it and not on each other.

/** A request as a route sees it. */
export interface RouteContext {
  request: Request;
  url: URL;
  /** Whose threads the caller may see. */
  resource: string;
  /** The decoded path parameters, in order. */
  params: string[];
}

/** What the routes share. */
export interface ApiParts {
  store: LunationStore;
  front: RunFront;
  bodyLimits: BodyLimits;
  /** An SSE response of a stream, tracked until it ends. */
  sse(events: AsyncIterable<ServerSentEvent>, detach: () => void, headers?: Record<string, string>): Response;
  /** The caller's thread; another resource's thread is "not found", as if it did not exist. */
  ownThread(threadId: string, resource: string): Promise<ThreadRecord>;
  /** Whether a tool's UI parts are `dynamic-tool`. */
  dynamicTool: (toolName: string) => boolean;
  /** How long after a run ended the chat stream still replays its message. */
  chatReplayMs: number;
  /** The chat sends this server is starting, by thread. */
  starting: StartingSends;
}
