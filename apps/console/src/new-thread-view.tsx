import { useState } from 'preact/hooks';
import type { Api } from './api.js';
import type { ThreadRecord } from './api-types.js';
import { messageOf, sendInChat } from './chat-view.js';
import { titleFromMessage } from './thread-title.js';

/**
 * A thread not created yet: the message box alone. The thread is created on the server with its first message
 * (titled after it), so "New thread" never leaves empty threads behind.
 */
export function NewThreadView(props: { api: Api; onChanged(): void }) {
  const [text, setText] = useState('');
  const [sending, setSending] = useState(false);
  const [error, setError] = useState<string | undefined>();

  const send = async (event: Event) => {
    event.preventDefault();
    const message = text.trim();
    if (!message || sending) return;
    setSending(true);
    setError(undefined);
    try {
      const { thread } = await props.api.json<{ thread: ThreadRecord }>('/threads', {
        body: { metadata: { title: titleFromMessage(message) } },
      });
      sendInChat(thread.id, message);
      location.hash = `#/threads/${encodeURIComponent(thread.id)}`;
      props.onChanged();
    } catch (failure) {
      setError(messageOf(failure));
      setSending(false);
    }
  };

  return (
    <section class="chat" aria-labelledby="chat-title">
      <header class="chat-head">
        <h2 id="chat-title" tabIndex={-1}>
          New thread
        </h2>
      </header>
      <p class="hint">The thread is saved when you send its first message, which also gives it its title.</p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <form class="composer" onSubmit={send}>
        <label for="message">Message</label>
        <textarea
          id="message"
          rows={3}
          value={text}
          placeholder='Ask something, or say "hello" for a tour'
          onInput={(event) => setText(event.currentTarget.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && !event.shiftKey) void send(event);
          }}
        />
        <div class="actions">
          <button type="submit" class="primary" disabled={sending || text.trim() === ''}>
            Send
          </button>
        </div>
      </form>
    </section>
  );
}
