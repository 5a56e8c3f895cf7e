import type { AgentEvent } from '@lunation/contract';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { type Api, ApiError, type StreamAnswer, type StreamEvent } from './api.js';
import type { RunSummary, SuspensionTicket, ThreadAnswer } from './api-types.js';
import { type FollowResult, type FollowState, followRun } from './run-follower.js';
import { type Decision, TicketCard } from './ticket-card.js';
import { applyEvent, type Entry, transcriptOf } from './transcript.js';
import { TranscriptView } from './transcript-view.js';

/** What the model is doing, for the "thinking" indicator. */
type Phase = 'idle' | 'thinking' | 'writing' | 'tool';

/** A decision made elsewhere (the inbox) for the chat to send when it opens the thread. */
let pendingDecision: { threadId: string; decision: Decision } | undefined;

/** Hands a decision to the chat of `threadId`, which sends it and streams the resumed run. */
export function decideInChat(threadId: string, decision: Decision): void {
  pendingDecision = { threadId, decision };
}

/** One thread: its history, the live run streamed as it happens, open tickets, and the message box. */
export function ChatView(props: { api: Api; threadId: string; onChanged(): void }) {
  const { api, threadId } = props;
  const path = `/threads/${encodeURIComponent(threadId)}`;
  // The committed history, then the live run's events applied on top (a resumed call updates its entry).
  const [entries, setEntries] = useState<Entry[]>([]);
  const [tickets, setTickets] = useState<SuspensionTicket[]>([]);
  const [runs, setRuns] = useState<RunSummary[]>([]);
  const [running, setRunning] = useState(false);
  const [phase, setPhase] = useState<Phase>('idle');
  const [connection, setConnection] = useState<{ state: FollowState; detail?: string } | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [text, setText] = useState('');
  const [title, setTitle] = useState(threadId);
  const detach = useRef<AbortController | undefined>(undefined);

  /** Loads the thread; with `activeRunId`, leaves that run's messages out (its events are replayed instead). */
  const reload = useCallback(
    async (activeRunId?: string) => {
      const [thread, messages, runList] = await Promise.all([
        api.json<ThreadAnswer>(path),
        api.json<{ messages: Parameters<typeof transcriptOf>[0] }>(`${path}/messages`),
        api.json<{ runs: RunSummary[] }>(`${path}/runs?limit=20`).catch(() => ({ runs: [] })),
      ]);
      const history = transcriptOf(
        messages.messages.filter((record) => !activeRunId || record.runId !== activeRunId),
      );
      // How the latest run ended, from the store: a stopped or failed run says so after a reload too.
      const ended = thread.latestRun?.termination;
      if (!activeRunId && ended?.type === 'cancelled') {
        history.push({ kind: 'notice', key: 'latest-end', text: 'Stopped.', tone: 'info' });
      } else if (!activeRunId && ended?.type === 'error') {
        history.push({
          kind: 'notice',
          key: 'latest-end',
          text: `The run failed: ${ended.error.message}`,
          tone: 'error',
        });
      }
      setEntries(history);
      setRuns(runList.runs);
      const metadataTitle = thread.thread.metadata?.title;
      setTitle(
        typeof metadataTitle === 'string' ? metadataTitle : (firstUserText(messages.messages) ?? threadId),
      );
      setTickets(thread.latestRun?.status === 'waiting' ? thread.latestRun.openTickets : []);
      return thread;
    },
    [api, path, threadId],
  );

  const onEvent = useCallback((event: AgentEvent, id: string | undefined) => {
    setEntries((current) => applyEvent(current, event));
    // Each applied event, for tools and tests watching the page (`addEventListener('lunation-event', …)`).
    dispatchEvent(new CustomEvent('lunation-event', { detail: { id, event } }));
    if (event.identity.parentRunId) return;
    if (event.type === 'run-start' || event.type === 'step-start') setPhase('thinking');
    else if (
      event.type === 'text-delta' ||
      event.type === 'reasoning-delta' ||
      event.type === 'tool-call-start'
    )
      setPhase('writing');
    else if (event.type === 'tool-execution-start') setPhase('tool');
    else if (event.type === 'step-end') setPhase('thinking');
    else if (event.type === 'tool-call-suspended') setTickets((open) => [...open, event.ticket]);
    else if (event.type === 'run-end') {
      setPhase('idle');
      setTickets(event.openTickets);
    }
  }, []);

  /** Streams a run from `start` (a message, decisions, or a reconnect) until it ends, then reloads the thread. */
  const follow = async (
    start: (signal: AbortSignal) => Promise<StreamAnswer>,
    known: { runId?: string; lastId?: string } = {},
  ): Promise<void> => {
    detach.current?.abort();
    const controller = new AbortController();
    detach.current = controller;
    setRunning(true);
    setPhase('thinking');
    setError(undefined);
    setTickets([]);
    let lost = false;
    let reached: FollowResult = {};
    try {
      const answer = await start(controller.signal);
      if (answer.type === 'json') {
        const body = answer.body as { openTickets?: SuspensionTicket[] };
        setTickets(body.openTickets ?? []);
      }
      reached = await followRun(
        api,
        threadId,
        answer,
        {
          onEvent,
          onState: (state, detail) => {
            if (state === 'lost') lost = true;
            setConnection(
              state === 'streaming' || state === 'ended'
                ? undefined
                : { state, ...(detail ? { detail } : {}) },
            );
          },
        },
        controller.signal,
        known,
      );
    } catch (failure) {
      if (!controller.signal.aborted) setError(messageOf(failure));
    }
    // Detached (the user left the thread, or a newer stream replaced this one): nothing more to do here.
    if (detach.current !== controller || controller.signal.aborted) return;
    detach.current = undefined;
    const { runId, lastId } = reached;
    if (lost && runId !== undefined) {
      // A single server restarted and forgot the run's events: it continues the cut-off run on its own.
      const continuation = await continuationOf(runId);
      if (continuation) {
        detach.current = undefined;
        await reload().catch(() => undefined);
        await follow(continuation, { runId });
        return;
      }
    }
    // The run went on past the end we saw (its tickets were decided elsewhere): keep following it.
    const latest = (await api.json<ThreadAnswer>(path).catch(() => undefined))?.latestRun;
    if (!lost && latest?.status === 'running' && latest.runId === runId && lastId) {
      await follow(
        (signal) =>
          api.stream(`${path}/runs/${encodeURIComponent(runId)}/events`, { lastEventId: lastId, signal }),
        { runId, lastId },
      );
      return;
    }
    setRunning(false);
    setPhase('idle');
    setConnection(undefined);
    await reload().catch((failure: unknown) => setError(messageOf(failure)));
    props.onChanged();
  };

  /**
   * After the stream is lost (the server restarted): waits while the store says the run still runs until the
   * restarted server streams its continuation (a single server continues cut-off runs at start, once the dead
   * life's lease lapsed). Resolves with a start for {@link follow} (the continuation's events from its start,
   * over the stored history), or undefined when the run no longer runs or the server does not continue it.
   */
  const continuationOf = async (
    runId: string,
  ): Promise<((signal: AbortSignal) => Promise<StreamAnswer>) | undefined> => {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && !detach.current) {
      const thread = await api.json<ThreadAnswer>(path).catch(() => undefined);
      if (thread && (thread.latestRun?.status !== 'running' || thread.latestRun.runId !== runId))
        return undefined;
      setConnection({ state: 'reconnecting', detail: 'waiting for the server to continue the run' });
      const probe = new AbortController();
      const answer = await api
        .stream(`${path}/runs/${encodeURIComponent(runId)}/events`, { signal: probe.signal })
        .catch(() => undefined);
      if (answer) {
        return (signal) => {
          signal.addEventListener('abort', () => probe.abort(), { once: true });
          return Promise.resolve(answer);
        };
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    if (!detach.current)
      setError('The server restarted and did not continue this run; send a message to continue it.');
    return undefined;
  };

  /**
   * Follows a run that is already active, replaying its events from its start over the older history. A run a
   * restarted server continued has a log of the continuation only (its ids carry a prefix, `k3x9.1`): then the
   * run's earlier messages come from the store.
   */
  const followActive = (runId: string) =>
    follow(
      async (signal) => {
        const answer = await api.stream(`${path}/runs/${encodeURIComponent(runId)}/events`, { signal });
        if (answer.type === 'json') return answer;
        const first = await answer.events.next();
        if (first.done) return answer;
        if (first.value.id?.includes('.')) await reload();
        return { type: 'stream', events: prepended(first.value, answer.events) };
      },
      { runId },
    );

  useEffect(() => {
    let cancelled = false;
    setEntries([]);
    setError(undefined);
    void (async () => {
      try {
        const first = await api.json<ThreadAnswer>(path);
        const active = first.latestRun?.status === 'running' ? first.latestRun.runId : undefined;
        await reload(active);
        if (cancelled) return;
        const pending = pendingDecision?.threadId === threadId ? pendingDecision.decision : undefined;
        pendingDecision = undefined;
        if (pending) {
          await follow((signal) =>
            api.stream(`${path}/decisions`, { body: { decisions: [pending] }, signal }),
          );
        } else if (active) {
          // A run is active (started elsewhere, or before the page was reloaded): follow it from its start.
          await followActive(active);
        }
      } catch (failure) {
        if (!cancelled) setError(messageOf(failure));
      }
    })();
    return () => {
      cancelled = true;
      // Leaving the thread detaches from its run; the run goes on.
      detach.current?.abort();
      detach.current = undefined;
    };
  }, [threadId]);

  const send = (event: Event) => {
    event.preventDefault();
    const message = text.trim();
    if (!message || running) return;
    setText('');
    void follow((signal) => api.stream(`${path}/messages`, { body: { text: message }, signal }));
  };

  const decide = (decision: Decision) => {
    void follow((signal) => api.stream(`${path}/decisions`, { body: { decisions: [decision] }, signal }));
  };

  const stop = async () => {
    try {
      await api.json(`${path}/cancel`, { method: 'POST' });
    } catch (failure) {
      setError(messageOf(failure));
    }
  };

  const status =
    connection?.state === 'reconnecting'
      ? `Connection lost; reconnecting${connection.detail ? ` (${connection.detail})` : ''}…`
      : connection?.state === 'lost'
        ? (connection.detail ?? 'Connection lost')
        : phase === 'thinking'
          ? 'Thinking…'
          : phase === 'tool'
            ? 'Running a tool…'
            : phase === 'writing'
              ? 'Writing…'
              : '';

  return (
    <section class="chat" aria-labelledby="chat-title">
      <header class="chat-head">
        <h2 id="chat-title">{title}</h2>
        {runs.length > 0 && (
          <nav aria-label="Runs of this thread">
            <details>
              <summary>Run timelines ({runs.length})</summary>
              <ul>
                {runs.map((run) => (
                  <li key={run.runId}>
                    <a
                      href={`#/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(run.runId)}`}
                    >
                      Timeline of run {run.runId.slice(0, 8)} ({run.status}, {run.steps} steps)
                    </a>
                  </li>
                ))}
              </ul>
            </details>
          </nav>
        )}
      </header>
      <TranscriptView entries={entries} />
      <p class={`status ${phase === 'thinking' ? 'thinking' : ''}`} role="status" aria-live="polite">
        {status}
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {tickets.length > 0 && (
        <section class="tickets" aria-label="Open tickets">
          {tickets.map((ticket) => (
            <TicketCard key={ticket.id} ticket={ticket} disabled={running} onDecide={decide} />
          ))}
        </section>
      )}
      <form class="composer" onSubmit={send}>
        <label for="message">Message</label>
        <textarea
          id="message"
          rows={2}
          value={text}
          placeholder={tickets.length > 0 ? 'A new message cancels the open tickets' : 'Ask something'}
          onInput={(event) => setText(event.currentTarget.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && !event.shiftKey) send(event);
          }}
        />
        <div class="actions">
          <button type="submit" class="primary" disabled={running || text.trim() === ''}>
            Send
          </button>
          <button type="button" onClick={stop} disabled={!running} title="Cancels the run on the server">
            Stop
          </button>
        </div>
        <p class="hint">
          Stop cancels the run. Closing the tab only detaches: the run goes on and you can come back to it.
        </p>
      </form>
    </section>
  );
}

function firstUserText(
  records: ReadonlyArray<{ message: { role: string; content: unknown[] } }>,
): string | undefined {
  for (const { message } of records) {
    if (message.role !== 'user') continue;
    const part = message.content.find((candidate) => (candidate as { type: string }).type === 'text') as
      | { text: string }
      | undefined;
    if (part) return part.text.slice(0, 60);
  }
  return undefined;
}

/** A failure as one line for the page. */
export function messageOf(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

/** `first`, then the rest of `events`. */
async function* prepended(
  first: StreamEvent,
  events: AsyncGenerator<StreamEvent>,
): AsyncGenerator<StreamEvent> {
  yield first;
  yield* events;
}
