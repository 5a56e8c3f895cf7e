import { useState } from 'preact/hooks';
import type { SuspensionTicket } from './api-types.js';
import { SchemaForm } from './schema-form.js';

/** An answer to one ticket, as `POST /threads/:id/decisions` takes it. */
export interface Decision {
  ticketId: string;
  /** Chosen by the console, so a decision sent again after a failure is applied once. */
  decisionId?: string;
  action: 'resume' | 'cancel';
  payload?: unknown;
  reason?: string;
}

/** An open ticket: approve, deny or always allow; a frontend tool's form; or an interrupted call's choices. */
export function TicketCard(props: {
  ticket: Pick<SuspensionTicket, 'id' | 'toolName' | 'arguments' | 'action' | 'message'> &
    Partial<Pick<SuspensionTicket, 'responseSchema' | 'parameters'>>;
  disabled: boolean;
  onDecide(decision: Decision): void;
  /** A decision for this ticket that could not be sent yet (the server cannot be reached): it is retried. */
  unsent?: { detail: string; onDiscard(): void };
}) {
  const { ticket, disabled, onDecide, unsent } = props;
  const [doneResult, setDoneResult] = useState('');
  const titleId = `ticket-${ticket.id}`;
  const decide = (action: Decision['action'], payload?: unknown, reason?: string) =>
    onDecide({
      ticketId: ticket.id,
      action,
      ...(payload === undefined ? {} : { payload }),
      ...(reason ? { reason } : {}),
    });
  return (
    <section class={`ticket ticket-${ticket.action}`} aria-labelledby={titleId} data-ticket={ticket.id}>
      <h3 id={titleId} tabIndex={-1}>
        {ticket.action === 'approve'
          ? 'Approval needed'
          : ticket.action === 'interrupted-call'
            ? 'Interrupted call'
            : 'Input needed'}
        : <code>{ticket.toolName}</code>
      </h3>
      <p>{ticket.message}</p>
      {/* An input ticket's message and form are its question: its arguments are shown with the call above. */}
      {(ticket.action === 'approve' || ticket.action === 'interrupted-call') && (
        <pre class="arguments">{formatJson(ticket.arguments)}</pre>
      )}
      {unsent && (
        <div class="unsent" role="status">
          <p>
            <strong>Not sent yet:</strong> {unsent.detail.replace(/\.?$/, '.')} Your decision stays here and
            is sent again when the server is back.
          </p>
          <button type="button" onClick={unsent.onDiscard}>
            Don't send it
          </button>
        </div>
      )}
      {ticket.action === 'approve' && (
        <div class="actions">
          <button type="button" class="primary" disabled={disabled} onClick={() => decide('resume')}>
            Approve
          </button>
          <button
            type="button"
            disabled={disabled}
            onClick={() => decide('cancel', undefined, 'denied in the console')}
          >
            Deny
          </button>
          <button type="button" disabled={disabled} onClick={() => decide('resume', { always: true })}>
            Always allow {ticket.toolName}
          </button>
        </div>
      )}
      {ticket.action === 'interrupted-call' && (
        <div class="actions">
          <button
            type="button"
            class="primary"
            disabled={disabled}
            onClick={() => decide('resume', { choice: 'rerun' })}
          >
            Run it again
          </button>
          <label>
            Result (treat as done)
            <input value={doneResult} onInput={(event) => setDoneResult(event.currentTarget.value)} />
          </label>
          <button
            type="button"
            disabled={disabled}
            onClick={() => decide('resume', { choice: 'done', result: parseLoose(doneResult) })}
          >
            Treat as done
          </button>
          <button type="button" disabled={disabled} onClick={() => decide('resume', { choice: 'fail' })}>
            Fail it
          </button>
        </div>
      )}
      {ticket.action !== 'approve' && ticket.action !== 'interrupted-call' && (
        <SchemaForm
          schema={ticket.responseSchema}
          name={ticket.toolName}
          disabled={disabled}
          onSubmit={(payload) => decide('resume', payload)}
          onDecline={() => decide('cancel', undefined, 'declined in the console')}
        />
      )}
    </section>
  );
}

/** Pretty JSON when the text is JSON, else the text. */
export function formatJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function parseLoose(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
