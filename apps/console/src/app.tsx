import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Api, ApiError } from './api.js';
import { ChatView } from './chat-view.js';
import { HistoryView } from './history-view.js';
import { InboxView } from './inbox-view.js';
import { NewThreadView } from './new-thread-view.js';
import { ThreadList } from './thread-list.js';
import { TimelineView } from './timeline-view.js';

type Route =
  | { page: 'home' }
  | { page: 'new' }
  | { page: 'inbox' }
  | { page: 'thread'; threadId: string }
  | { page: 'history'; threadId: string }
  | { page: 'timeline'; threadId: string; runId: string };

const TOKEN_KEY = 'lunation-console-token';

/** The console: sign-in when the server wants a token, the threads beside the chat, the inbox, timelines. */
export function App() {
  const [token, setToken] = useState<string | undefined>(
    () => sessionStorage.getItem(TOKEN_KEY) ?? undefined,
  );
  const [auth, setAuth] = useState<'checking' | 'needed' | 'ok'>('checking');
  const [route, setRoute] = useState<Route>(() => routeOf(location.hash));
  const [version, setVersion] = useState(0);
  const api = useMemo(() => new Api(token), [token]);
  const shownRoute = useRef<string | undefined>(undefined);

  useEffect(() => {
    const onHash = () => setRoute(routeOf(location.hash));
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);

  useEffect(() => {
    setAuth('checking');
    api
      .json('/threads?limit=1')
      .then(() => setAuth('ok'))
      .catch((error: unknown) =>
        setAuth(error instanceof ApiError && error.status === 401 ? 'needed' : 'ok'),
      );
  }, [api]);

  // After a route change (not the first page), focus moves to the new page's heading, or to the message box of
  // a new thread and of the chat a new thread's first message opened.
  useEffect(() => {
    if (auth !== 'ok') return;
    const key = location.hash;
    const previous = shownRoute.current;
    shownRoute.current = key;
    if (previous === undefined || previous === key) return;
    const target =
      route.page === 'new' || (previous === '#/new' && route.page === 'thread')
        ? document.getElementById('message')
        : document.querySelector<HTMLElement>('main h2');
    target?.focus();
  }, [route, auth]);

  const signOut = () => {
    sessionStorage.removeItem(TOKEN_KEY);
    setToken(undefined);
  };

  if (auth === 'checking') return <p role="status">Connecting…</p>;
  if (auth === 'needed') {
    return (
      <Login
        failed={token !== undefined}
        onToken={(value) => {
          sessionStorage.setItem(TOKEN_KEY, value);
          setToken(value);
        }}
      />
    );
  }
  const changed = () => setVersion((value) => value + 1);
  const threadId =
    route.page === 'thread' || route.page === 'timeline' || route.page === 'history'
      ? route.threadId
      : undefined;
  // Skip links are buttons: an anchor's `#main` would be a route of this hash-routed page.
  const skipTo = (id: string) => () => document.getElementById(id)?.focus();
  return (
    <div class={`layout page-${route.page}`}>
      <button type="button" class="skip-link" onClick={skipTo('main')}>
        Skip to main content
      </button>
      {(route.page === 'thread' || route.page === 'new') && (
        <button type="button" class="skip-link" onClick={skipTo('message')}>
          Skip to the message box
        </button>
      )}
      <header class="top">
        <h1>Lunation console</h1>
        <nav aria-label="Sections">
          <a href="#/" aria-current={route.page === 'home' ? 'page' : undefined}>
            Threads
          </a>
          <a href="#/inbox" aria-current={route.page === 'inbox' ? 'page' : undefined}>
            Inbox
          </a>
        </nav>
        {token && (
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        )}
      </header>
      <aside>
        <ThreadList api={api} currentId={threadId} version={version} onChanged={changed} />
      </aside>
      <main id="main" tabIndex={-1}>
        {route.page === 'home' && (
          <section aria-labelledby="home-title">
            <h2 id="home-title" tabIndex={-1}>
              Welcome
            </h2>
            <p>
              Start a new thread or open one. The offline demo model answers "hello" with a tour: a tool call
              and an approval.
            </p>
          </section>
        )}
        {route.page === 'new' && <NewThreadView api={api} onChanged={changed} />}
        {route.page === 'inbox' && <InboxView api={api} version={version} />}
        {route.page === 'thread' && (
          <ChatView key={route.threadId} api={api} threadId={route.threadId} onChanged={changed} />
        )}
        {route.page === 'history' && (
          <HistoryView key={route.threadId} api={api} threadId={route.threadId} onChanged={changed} />
        )}
        {route.page === 'timeline' && (
          <TimelineView api={api} threadId={route.threadId} runId={route.runId} />
        )}
      </main>
    </div>
  );
}

function Login(props: { failed: boolean; onToken(token: string): void }) {
  const [value, setValue] = useState('');
  return (
    <main class="login">
      <h1>Lunation console</h1>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (value.trim()) props.onToken(value.trim());
        }}
      >
        <p>
          This server needs an access token (one of its <code>--token</code> values).
        </p>
        <label for="token">Access token</label>
        <input
          id="token"
          type="password"
          autoComplete="current-password"
          value={value}
          onInput={(event) => setValue(event.currentTarget.value)}
        />
        {props.failed && <p role="alert">That token was refused.</p>}
        <button type="submit" class="primary">
          Sign in
        </button>
      </form>
    </main>
  );
}

function routeOf(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeSafe);
  if (parts[0] === 'inbox') return { page: 'inbox' };
  if (parts[0] === 'new') return { page: 'new' };
  if (parts[0] === 'threads' && parts[1]) {
    if (parts[2] === 'runs' && parts[3]) return { page: 'timeline', threadId: parts[1], runId: parts[3] };
    if (parts[2] === 'history') return { page: 'history', threadId: parts[1] };
    return { page: 'thread', threadId: parts[1] };
  }
  return { page: 'home' };
}

function decodeSafe(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
