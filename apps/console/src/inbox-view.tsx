import { useEffect, useState } from 'preact/hooks';
import type { Api } from './api.js';
import type { InboxThread } from './api-types.js';
import { decideInChat, messageOf } from './chat-view.js';
import { titleOf } from './thread-title.js';
import { TicketCard } from './ticket-card.js';

/** Every thread of the caller waiting for a decision, with its open tickets. */
export function InboxView(props: { api: Api; version: number }) {
  const [threads, setThreads] = useState<InboxThread[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  useEffect(() => {
    props.api
      .json<{ threads: InboxThread[] }>('/inbox')
      .then((answer) => setThreads(answer.threads))
      .catch((failure: unknown) => setError(messageOf(failure)));
  }, [props.api, props.version]);
  return (
    <section class="inbox" aria-labelledby="inbox-title">
      <h2 id="inbox-title" tabIndex={-1}>
        Inbox
      </h2>
      <p>Threads waiting for your decision. Deciding opens the thread and streams the resumed run.</p>
      {error && <p role="alert">{error}</p>}
      {threads?.length === 0 && <p class="empty">Nothing waits for a decision.</p>}
      <ul class="inbox-list">
        {threads?.map((item) => (
          <li key={item.thread.id}>
            <h3>
              <a href={`#/threads/${encodeURIComponent(item.thread.id)}`}>{titleOf(item.thread)}</a>
            </h3>
            {item.tickets.map((ticket) => (
              <TicketCard
                key={ticket.ticketId}
                ticket={{
                  id: ticket.ticketId,
                  toolName: ticket.toolName,
                  arguments: JSON.stringify(ticket.arguments),
                  action: ticket.action,
                  message: ticket.message,
                  ...(ticket.responseSchema === undefined ? {} : { responseSchema: ticket.responseSchema }),
                  ...(ticket.parameters === undefined ? {} : { parameters: ticket.parameters }),
                }}
                disabled={false}
                onDecide={(decision) => {
                  decideInChat(item.thread.id, decision);
                  location.hash = `#/threads/${encodeURIComponent(item.thread.id)}`;
                }}
              />
            ))}
          </li>
        ))}
      </ul>
    </section>
  );
}
