import type { AgentEvent } from '@lunation/contract';
import { type Api, ApiError, type StreamAnswer, type StreamEvent } from './api.js';

/** Where a followed run stands, for the page's status line. */
export type FollowState = 'streaming' | 'reconnecting' | 'ended' | 'lost' | 'detached';

/** What {@link followRun} reports while it follows a run. */
export interface FollowCallbacks {
  onEvent(event: AgentEvent, id: string | undefined): void;
  onState(state: FollowState, detail?: string): void;
}

/** How far {@link followRun} got. */
export interface FollowResult {
  runId?: string;
  lastId?: string;
  ended?: boolean;
}

const RECONNECT_DELAYS_MS = [250, 500, 1_000, 2_000, 3_000];
/** How long the page keeps trying to reconnect before it gives up and reloads the thread instead. */
const RECONNECT_BUDGET_MS = 60_000;

/**
 * Follows one run's events from the answer of the request that started (or resumed) it until `run-end`.
 * When the connection drops (a network failure, the server restarting) it reconnects to
 * `GET /threads/:id/runs/:runId/events` with `Last-Event-ID`, so every event arrives once, in order: events
 * whose id is not after the last one seen are dropped. `signal` detaches: the run goes on without the page.
 * Resolves with the run id and the last event id seen (none when the answer was JSON: decisions that leave
 * tickets open), and whether the run's `run-end` arrived.
 */
export async function followRun(
  api: Api,
  threadId: string,
  answer: StreamAnswer,
  callbacks: FollowCallbacks,
  signal: AbortSignal,
  known: { runId?: string; lastId?: string } = {},
): Promise<FollowResult> {
  if (answer.type === 'json') return {};
  let runId: string | undefined = known.runId;
  let lastId: string | undefined = known.lastId;
  let ended = false;
  const result = (): FollowResult => ({
    ...(runId === undefined ? {} : { runId }),
    ...(lastId === undefined ? {} : { lastId }),
    ended,
  });

  const consume = async (events: AsyncGenerator<StreamEvent>) => {
    callbacks.onState('streaming');
    for await (const { id, event, data } of events) {
      if (id !== undefined && id !== '' && lastId !== undefined && !isAfter(id, lastId)) continue;
      if (id) lastId = id;
      if (event === 'run-submitted') {
        runId ??= (data as { runId?: string }).runId;
        continue;
      }
      const agentEvent = data as AgentEvent;
      if (!agentEvent || typeof agentEvent !== 'object' || !('type' in agentEvent)) continue;
      if (!agentEvent.identity.parentRunId) runId ??= agentEvent.identity.runId;
      callbacks.onEvent(agentEvent, id);
      if (agentEvent.type === 'run-end' && agentEvent.identity.runId === runId) {
        ended = true;
        return;
      }
    }
  };

  try {
    await consume(answer.events);
  } catch (error) {
    if (signal.aborted) {
      callbacks.onState('detached');
      return result();
    }
    if (!isConnectionError(error)) throw error;
  }
  const started = Date.now();
  let attempt = 0;
  while (!ended && !signal.aborted) {
    if (runId === undefined) {
      callbacks.onState('lost', 'The connection dropped before the run started');
      return result();
    }
    if (Date.now() - started > RECONNECT_BUDGET_MS) {
      callbacks.onState('lost', 'The server did not come back');
      return result();
    }
    callbacks.onState('reconnecting', lastId === undefined ? undefined : `after event ${lastId}`);
    await delay(RECONNECT_DELAYS_MS[Math.min(attempt, RECONNECT_DELAYS_MS.length - 1)]!, signal);
    attempt++;
    if (signal.aborted) break;
    try {
      const resumed = await api.stream(
        `/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}/events`,
        {
          ...(lastId === undefined ? {} : { lastEventId: lastId }),
          signal,
        },
      );
      if (resumed.type === 'json') break;
      attempt = 0;
      await consume(resumed.events);
    } catch (error) {
      if (signal.aborted) break;
      if (error instanceof ApiError && error.status === 404) {
        // This server does not know the run's events (it restarted in local mode): the store has the rest.
        callbacks.onState('lost', 'The server no longer streams this run; showing what the store has');
        return result();
      }
      if (!isConnectionError(error)) throw error;
    }
  }
  callbacks.onState(signal.aborted ? 'detached' : 'ended');
  return result();
}

/** Event ids are decimal positions in the run's log. */
function isAfter(id: string, lastId: string): boolean {
  const [a, b] = [Number(id), Number(lastId)];
  if (Number.isFinite(a) && Number.isFinite(b)) return a > b;
  return id !== lastId;
}

/** A dropped connection, a refused one, or a server answering 5xx or 409 while it restarts. */
function isConnectionError(error: unknown): boolean {
  if (error instanceof ApiError) return error.status === 0 || error.status >= 500 || error.status === 409;
  return (
    error instanceof TypeError ||
    (error instanceof Error && /network|fetch|terminated|aborted/i.test(error.message))
  );
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
