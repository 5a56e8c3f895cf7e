import { useChat } from '@ai-sdk/react';
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from 'ai';
import { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';

/**
 * A chat page as an app would write it with the AI SDK's React client, unchanged: `useChat` with the default
 * transport pointed at @lunation/http's `/chat` routes on another origin, its messages initialised from
 * `GET /chat/:id/messages`, `resume: true` for a run still going when the page (re)loads, and approval buttons
 * that call `addToolApprovalResponse`. The test reads what it renders, and `window.chatState`.
 */

/** What the page exposes to the test after every render. */
export interface ChatPageState {
  status: string;
  error: string | null;
  messages: UIMessage[];
  /** Errors the page saw outside the chat's own `error` (e.g. an uncaught promise rejection). */
  pageErrors: string[];
}

declare global {
  interface Window {
    chatState?: ChatPageState;
  }
}

const query = new URLSearchParams(location.search);
const api = query.get('api') ?? '';
const threadId = query.get('thread') ?? '';
const headers = { authorization: `Bearer ${query.get('token') ?? ''}` };
const pageErrors: string[] = [];
addEventListener('unhandledrejection', (event) => pageErrors.push(String(event.reason)));
addEventListener('error', (event) => pageErrors.push(String(event.message)));

function Chat({ initial }: { initial: UIMessage[] }) {
  const { messages, status, error, sendMessage, addToolApprovalResponse } = useChat({
    id: threadId,
    messages: initial,
    resume: true,
    transport: new DefaultChatTransport({ api: `${api}/chat`, headers }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [text, setText] = useState('');
  useEffect(() => {
    window.chatState = { status, error: error?.message ?? null, messages, pageErrors };
  });
  return (
    <main>
      <ol id="messages">
        {messages.map((message) => (
          <li key={message.id} data-role={message.role}>
            {message.parts.map((part, index) => {
              const key = `${message.id}:${index}`;
              if (part.type === 'text') {
                return (
                  <p key={key} data-part="text">
                    {part.text}
                  </p>
                );
              }
              if (part.type === 'tool-read_file') {
                return (
                  <div key={key} data-part="tool" data-call={part.toolCallId} data-state={part.state}>
                    read_file {JSON.stringify(part.input)}
                    {part.state === 'approval-requested' ? (
                      <button
                        type="button"
                        onClick={() => addToolApprovalResponse({ id: part.approval.id, approved: true })}
                      >
                        Approve {part.toolCallId}
                      </button>
                    ) : null}
                    {part.state === 'output-available' ? <output>{String(part.output)}</output> : null}
                  </div>
                );
              }
              return null;
            })}
          </li>
        ))}
      </ol>
      {error ? <p role="alert">{error.message}</p> : null}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void sendMessage({ text });
          setText('');
        }}
      >
        <input aria-label="Message" value={text} onChange={(event) => setText(event.target.value)} />
        <button type="submit" disabled={status !== 'ready'}>
          Send
        </button>
      </form>
    </main>
  );
}

function Page() {
  const [initial, setInitial] = useState<UIMessage[] | undefined>();
  const [failure, setFailure] = useState<string | undefined>();
  useEffect(() => {
    fetch(`${api}/chat/${encodeURIComponent(threadId)}/messages`, { headers })
      .then(async (response) => {
        if (!response.ok) throw new Error(`history answered ${response.status}`);
        setInitial(((await response.json()) as { messages: UIMessage[] }).messages);
      })
      .catch((error: unknown) => {
        pageErrors.push(String(error));
        setFailure(String(error));
      });
  }, []);
  if (failure) return <p role="alert">{failure}</p>;
  return initial ? <Chat initial={initial} /> : <p>Loading…</p>;
}

createRoot(document.getElementById('root')!).render(<Page />);
