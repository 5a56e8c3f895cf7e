import type { ServerResponse } from 'node:http';
import type { ResumeDecision } from '@lunation/contract';

/** The caller's request on one of its threads, as a front sees it. */
export interface FrontRequest {
  response: ServerResponse;
  threadId: string;
  /** Whose thread it is (checked by the server before the front is called). */
  resource: string;
}

/**
 * Where the server's run requests go: the runtime in this process (`LocalFront`), or a fleet's workers
 * through a dispatcher (`FleetFront`). Each answers on the response: an event stream or JSON.
 */
export interface RunFront {
  /** Starts a run with the text and streams its events. */
  send(request: FrontRequest, text: string): Promise<void>;
  /** Answers open tickets: streams the resumed run's events, or JSON while tickets stay open. */
  decide(request: FrontRequest, decisions: ResumeDecision[]): Promise<void>;
  /** Cancels the thread's run; JSON `{ cancelled }`. */
  cancel(request: FrontRequest): Promise<void>;
  /** Streams the events of one of the thread's runs after `lastEventId` (a reconnecting client's). */
  follow(request: FrontRequest, runId: string, lastEventId: string | undefined): Promise<void>;
  /** Ends what the front runs or streams, for a shutdown. */
  close(): Promise<void>;
}
