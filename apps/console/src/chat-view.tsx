import type { AgentEvent } from '@lunation/contract';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { type Api, ApiError, type StreamAnswer, type StreamEvent } from './api.js';
import type { ForkOrigin, RunSummary, RunTimeline, SuspensionTicket, ThreadAnswer } from './api-types.js';
import { type FollowResult, type FollowState, followRun } from './run-follower.js';
import { runLabel } from './run-labels.js';
import { storedTitle, titleFromMessage } from './thread-title.js';
import { type Decision, TicketCard } from './ticket-card.js';
import { applyEvent, type Entry, transcriptOf } from './transcript.js';
import { TranscriptView } from './transcript-view.js';

/** What the model is doing, for the "thinking" indicator. */
type Phase = 'idle' | 'thinking' | 'writing' | 'tool';

/** What the chat of a thread starts with when it opens: a decision made in the inbox, a new thread's message. */
type PendingStart =
  | { threadId: string; kind: 'decision'; decision: Decision }
  | { threadId: string; kind: 'message'; text: string }
  | { threadId: string; kind: 'run'; runId: string };
let pendingStart: PendingStart | undefined;

/** Hands a decision to the chat of `threadId`, which sends it and streams the resumed run. */
export function decideInChat(threadId: string, decision: Decision): void {
  pendingStart = { threadId, kind: 'decision', decision };
}

/** Hands a new thread's first message to its chat, which sends it and streams the run. */
export function sendInChat(threadId: string, text: string): void {
  pendingStart = { threadId, kind: 'message', text };
}

/**
 * Hands a run started elsewhere (a fork's first run) to the chat of `threadId`, which follows it from its start,
 * even before the store shows it as the thread's latest run.
 */
export function followInChat(threadId: string, runId: string): void {
  pendingStart = { threadId, kind: 'run', runId };
}

/** A random id for a decision (`crypto.randomUUID` needs a secure context; a LAN address over http is not). */
function newDecisionId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `console-${Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

/** Failures worth sending a decision again for: no connection, a restarting server, a thread busy meanwhile. */
function isTransient(error: unknown): boolean {
  if (!(error instanceof ApiError)) return error instanceof TypeError;
  return error.status === 0 || error.status >= 500 || error.code === 'thread-busy';
}

const RESEND_DELAYS_MS = [500, 1_000, 2_000, 3_000];

/** Tool calls' marks that only the live events or the run's timeline tell (not the stored messages). */
type CallMarks = Map<string, { rerun?: boolean; fromLedger?: boolean }>;

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
  const [title, setTitle] = useState<{ text: string; stored: boolean } | undefined>();
  const [renaming, setRenaming] = useState(false);
  const [unsent, setUnsent] = useState<{ ticketId: string; detail: string } | undefined>();
  const [forkedFrom, setForkedFrom] = useState<(ForkOrigin & { title?: string }) | undefined>();
  const detach = useRef<AbortController | undefined>(undefined);
  const marks = useRef<CallMarks>(new Map());
  /** Where focus goes once the page shows it: a decided call, or the next open ticket. */
  const focusNext = useRef<string | undefined>(undefined);

  useLayoutEffect(() => {
    const selector = focusNext.current;
    if (!selector) return;
    const target = document.querySelector<HTMLElement>(selector);
    if (!target) return;
    focusNext.current = undefined;
    target.focus();
  });

  /** Loads the thread; with `activeRunId`, leaves that run's messages out (its events are replayed instead). */
  const reload = useCallback(
    async (activeRunId?: string) => {
      const [thread, messages, runList] = await Promise.all([
        api.json<ThreadAnswer>(path),
        api.json<{ messages: Parameters<typeof transcriptOf>[0] }>(`${path}/messages`),
        api.json<{ runs: RunSummary[] }>(`${path}/runs?limit=100`).catch(() => ({ runs: [] })),
      ]);
      // The latest run's timeline tells which of its calls ran again after a crash: the messages do not.
      const latest = thread.latestRun;
      const timeline =
        latest && latest.runId !== activeRunId
          ? await api
              .json<RunTimeline>(`${path}/runs/${encodeURIComponent(latest.runId)}/timeline`)
              .catch(() => undefined)
          : undefined;
      // The ledger knows a call by its `callId` when the runtime gave it one: the chat by the model's id.
      const modelIds = new Map<string, string>();
      for (const { message } of messages.messages) {
        if (message.role !== 'assistant') continue;
        for (const part of message.content) {
          if (part.type === 'tool-call') modelIds.set(part.callId ?? part.toolCallId, part.toolCallId);
        }
      }
      for (const entry of timeline?.entries ?? []) {
        if (entry.kind !== 'tool' || (!entry.rerun && !entry.fromLedger)) continue;
        marks.current.set(modelIds.get(entry.toolCallId) ?? entry.toolCallId, {
          rerun: entry.rerun,
          fromLedger: entry.fromLedger,
        });
      }
      const history = transcriptOf(
        messages.messages.filter((record) => !activeRunId || record.runId !== activeRunId),
      ).map((entry) => {
        const mark = entry.kind === 'tool' ? marks.current.get(entry.toolCallId) : undefined;
        return mark ? { ...entry, ...mark } : entry;
      });
      if (timeline?.entries.some((entry) => entry.kind === 'recovered' || entry.kind === 'lease-takeover')) {
        history.push({
          kind: 'notice',
          key: 'latest-recovered',
          text: 'This run was cut off by a crash and continued where it stopped.',
          tone: 'info',
        });
      }
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
      const stored = storedTitle(thread.thread);
      setTitle({
        text: stored ?? firstUserText(messages.messages) ?? 'Untitled thread',
        stored: stored !== undefined,
      });
      setTickets(thread.latestRun?.status === 'waiting' ? thread.latestRun.openTickets : []);
      const origin = forkOriginOf(thread.thread.metadata);
      setForkedFrom((known) => (known?.threadId === origin?.threadId ? known : origin));
      return thread;
    },
    [api, path, threadId],
  );

  const onEvent = useCallback((event: AgentEvent, id: string | undefined) => {
    setEntries((current) => applyEvent(current, event));
    if (event.type === 'tool-execution-start' && event.rerun) {
      marks.current.set(event.toolCallId, { ...marks.current.get(event.toolCallId), rerun: true });
    } else if (event.type === 'tool-result' && event.fromLedger) {
      marks.current.set(event.toolCallId, { ...marks.current.get(event.toolCallId), fromLedger: true });
    }
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
    let lost = false;
    let reached: FollowResult = {};
    try {
      // The open tickets stay on screen until the request that answers them got through.
      const answer = await start(controller.signal);
      if (answer.type === 'json') {
        const body = answer.body as { openTickets?: SuspensionTicket[] };
        setTickets(body.openTickets ?? []);
        const next = body.openTickets?.[0];
        if (next && focusNext.current) focusNext.current = `[data-ticket="${CSS.escape(next.id)}"] h3`;
      } else {
        setTickets([]);
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
    setUnsent(undefined);
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
    if (!lost && latest?.status === 'running' && runId === undefined) {
      // A decision sent again after its first answer was lost: the run it resumed is already going.
      await followActive(latest.runId);
      return;
    }
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
   * The events of the run from its start. A run just submitted to a fleet is found once a worker starts it: a 404
   * is asked again for a few seconds.
   */
  const eventsOf = async (runId: string, signal: AbortSignal): Promise<StreamAnswer> => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        return await api.stream(`${path}/runs/${encodeURIComponent(runId)}/events`, { signal });
      } catch (failure) {
        if (!(failure instanceof ApiError && failure.status === 404) || Date.now() > deadline) throw failure;
        await pause(300, signal);
        if (signal.aborted) throw failure;
      }
    }
  };

  /**
   * Follows a run that is already active, replaying its events from its start over the older history. A run a
   * restarted server continued has a log of the continuation only (its ids carry a prefix, `k3x9.1`): then the
   * run's earlier messages come from the store.
   */
  const followActive = (runId: string) =>
    follow(
      async (signal) => {
        const answer = await eventsOf(runId, signal);
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
        const pending = pendingStart?.threadId === threadId ? pendingStart : undefined;
        pendingStart = undefined;
        const active =
          pending?.kind === 'run'
            ? pending.runId
            : first.latestRun?.status === 'running'
              ? first.latestRun.runId
              : undefined;
        await reload(active);
        if (cancelled) return;
        if (pending?.kind === 'decision') {
          const ticket = first.latestRun?.openTickets.find((open) => open.id === pending.decision.ticketId);
          await decide(pending.decision, ticket?.toolCallId);
        } else if (pending?.kind === 'message') {
          await follow((signal) => api.stream(`${path}/messages`, { body: { text: pending.text }, signal }));
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

  // A fork names the thread it came from: its title, when the caller can still read it.
  useEffect(() => {
    if (!forkedFrom || forkedFrom.title !== undefined) return;
    api
      .json<ThreadAnswer>(`/threads/${encodeURIComponent(forkedFrom.threadId)}`)
      .then((original) =>
        setForkedFrom((known) =>
          known?.threadId === forkedFrom.threadId
            ? { ...known, title: storedTitle(original.thread) ?? 'Untitled thread' }
            : known,
        ),
      )
      .catch(() => undefined);
  }, [forkedFrom?.threadId]);

  const send = (event: Event) => {
    event.preventDefault();
    const message = text.trim();
    if (!message || running) return;
    setText('');
    if (title && !title.stored && entries.length === 0) void rename(titleFromMessage(message), false);
    void follow((signal) => api.stream(`${path}/messages`, { body: { text: message }, signal }));
  };

  /**
   * Sends a decision and streams the run it resumes. While the server cannot be reached the ticket stays on
   * screen, marked as not sent, and the decision is sent again (with the same decision id, so it is applied
   * once) until it gets through, the user discards it, or the server refuses it.
   */
  const decide = (decision: Decision, toolCallId?: string) => {
    const sent: Decision = { ...decision, decisionId: decision.decisionId ?? newDecisionId() };
    const callId = toolCallId ?? tickets.find((ticket) => ticket.id === decision.ticketId)?.toolCallId;
    return follow(async (signal) => {
      for (let attempt = 0; ; attempt++) {
        try {
          const answer = await api.stream(`${path}/decisions`, { body: { decisions: [sent] }, signal });
          setUnsent(undefined);
          focusNext.current = callId ? `[data-call="${CSS.escape(callId)}"]` : '#chat-title';
          return answer;
        } catch (failure) {
          if (signal.aborted || !isTransient(failure)) throw failure;
          setUnsent({ ticketId: decision.ticketId, detail: messageOf(failure) });
          await pause(RESEND_DELAYS_MS[Math.min(attempt, RESEND_DELAYS_MS.length - 1)]!, signal);
          if (signal.aborted) throw failure;
        }
      }
    });
  };

  /** Drops a decision that could not be sent: the ticket can be answered again. */
  const discardUnsent = () => {
    detach.current?.abort();
    detach.current = undefined;
    setUnsent(undefined);
    setRunning(false);
    setPhase('idle');
  };

  /** Stores the thread's title (an empty one removes it); `focus` returns focus to the heading after. */
  const rename = async (value: string, focus: boolean) => {
    const next = value.trim();
    try {
      await api.json(path, { method: 'PATCH', body: { metadata: { title: next || null } } });
      setTitle({ text: next || firstUserText([]) || 'Untitled thread', stored: next !== '' });
      setRenaming(false);
      if (focus) focusNext.current = '#chat-title';
      props.onChanged();
      if (!next) await reload().catch(() => undefined);
    } catch (failure) {
      setError(messageOf(failure));
    }
  };

  const stop = async () => {
    try {
      await api.json(`${path}/cancel`, { method: 'POST' });
    } catch (failure) {
      setError(messageOf(failure));
    }
  };

  const status = unsent
    ? ''
    : connection?.state === 'reconnecting'
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
        {renaming && title ? (
          <RenameForm
            title={title.stored ? title.text : ''}
            placeholder={title.text}
            onSave={(value) => void rename(value, true)}
            onCancel={() => {
              setRenaming(false);
              focusNext.current = '#rename-thread';
            }}
          />
        ) : (
          <div class="chat-title">
            <h2 id="chat-title" tabIndex={-1}>
              {title?.text ?? 'Loading…'}
            </h2>
            {title && (
              <button
                type="button"
                id="rename-thread"
                class="small"
                aria-label={`Rename thread ${title.text}`}
                onClick={() => {
                  setRenaming(true);
                  focusNext.current = '#thread-title';
                }}
              >
                Rename
              </button>
            )}
          </div>
        )}
        {forkedFrom && (
          <p class="forked-from">
            Forked from{' '}
            <a href={`#/threads/${encodeURIComponent(forkedFrom.threadId)}`}>
              {forkedFrom.title ? `“${forkedFrom.title}”` : 'another thread'}
            </a>{' '}
            at step {forkedFrom.checkpoint}
          </p>
        )}
        {runs.length > 0 && (
          <a class="history-link" href={`#/threads/${encodeURIComponent(threadId)}/history`}>
            History and forks
          </a>
        )}
        {runs.length > 0 && (
          <nav aria-label="Runs of this thread">
            <details>
              <summary>Run timelines ({runs.length})</summary>
              <ul>
                {runs.map((run, index) => (
                  <li key={run.runId}>
                    <a
                      href={`#/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(run.runId)}`}
                    >
                      Timeline of {runLabel(run, index).replace(/^Run/, 'run')} ({run.status}, {run.steps}{' '}
                      {run.steps === 1 ? 'step' : 'steps'})
                    </a>
                  </li>
                ))}
              </ul>
            </details>
          </nav>
        )}
      </header>
      <TranscriptView entries={entries} />
      <p class={`status ${status === 'Thinking…' ? 'thinking' : ''}`} role="status" aria-live="polite">
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
            <TicketCard
              key={ticket.id}
              ticket={ticket}
              disabled={running}
              onDecide={(decision) => void decide(decision, ticket.toolCallId)}
              {...(unsent?.ticketId === ticket.id
                ? { unsent: { detail: unsent.detail, onDiscard: discardUnsent } }
                : {})}
            />
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

/** The title as a form: a labelled field, Save and Cancel (Escape cancels too). */
function RenameForm(props: {
  title: string;
  placeholder: string;
  onSave(value: string): void;
  onCancel(): void;
}) {
  const [value, setValue] = useState(props.title);
  return (
    <form
      class="rename"
      aria-label="Rename thread"
      onSubmit={(event) => {
        event.preventDefault();
        props.onSave(value);
      }}
    >
      <label for="thread-title">Thread title</label>
      <input
        id="thread-title"
        value={value}
        maxLength={200}
        placeholder={props.placeholder}
        onInput={(event) => setValue(event.currentTarget.value)}
        onKeyDown={(event) => {
          if (event.key === 'Escape') props.onCancel();
        }}
      />
      <div class="actions">
        <button type="submit" class="primary">
          Save title
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
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

function firstUserText(
  records: ReadonlyArray<{ message: { role: string; content: unknown[] } }>,
): string | undefined {
  for (const { message } of records) {
    if (message.role !== 'user') continue;
    const part = message.content.find((candidate) => (candidate as { type: string }).type === 'text') as
      | { text: string }
      | undefined;
    if (part) return titleFromMessage(part.text);
  }
  return undefined;
}

/** The thread's `metadata.forkedFrom`, when it is a fork. */
function forkOriginOf(metadata: Record<string, unknown> | undefined): ForkOrigin | undefined {
  const origin = metadata?.forkedFrom as Partial<ForkOrigin> | undefined;
  if (typeof origin?.threadId !== 'string' || typeof origin.checkpoint !== 'number') return undefined;
  return { threadId: origin.threadId, checkpoint: origin.checkpoint, messageCount: origin.messageCount ?? 0 };
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
