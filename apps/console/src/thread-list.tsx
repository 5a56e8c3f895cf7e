import { useEffect, useState } from 'preact/hooks';
import type { Api } from './api.js';
import type { ThreadRecord } from './api-types.js';
import { messageOf } from './chat-view.js';
import { titleOf } from './thread-title.js';

/** The caller's threads: search, open, start a new one (created on its first message), delete. */
export function ThreadList(props: {
  api: Api;
  currentId: string | undefined;
  version: number;
  onChanged(): void;
}) {
  const { api } = props;
  const [threads, setThreads] = useState<ThreadRecord[]>([]);
  const [search, setSearch] = useState('');
  const [error, setError] = useState<string | undefined>();

  useEffect(() => {
    let cancelled = false;
    const timer = setTimeout(async () => {
      try {
        const found = await listAll(api, search.trim());
        if (!cancelled) {
          setThreads(found.reverse());
          setError(undefined);
        }
      } catch (failure) {
        if (!cancelled) setError(messageOf(failure));
      }
    }, 150);
    return () => {
      cancelled = true;
      clearTimeout(timer);
    };
  }, [api, search, props.version]);

  const remove = async (thread: ThreadRecord) => {
    if (!confirm(`Delete the thread "${titleOf(thread)}" and its history?`)) return;
    try {
      await api.json(`/threads/${encodeURIComponent(thread.id)}`, { method: 'DELETE' });
      if (props.currentId === thread.id) location.hash = '#/';
      props.onChanged();
    } catch (failure) {
      setError(messageOf(failure));
    }
  };

  return (
    <nav class="threads" aria-label="Threads">
      <a href="#/new" class="button primary">
        New thread
      </a>
      <label for="thread-search">Search threads</label>
      <input
        id="thread-search"
        type="search"
        value={search}
        onInput={(event) => setSearch(event.currentTarget.value)}
        placeholder="Words in the title or first message"
      />
      {error && <p role="alert">{error}</p>}
      <ul>
        {threads.map((thread) => (
          <li key={thread.id} class={thread.id === props.currentId ? 'current' : ''}>
            <a
              href={`#/threads/${encodeURIComponent(thread.id)}`}
              aria-current={thread.id === props.currentId ? 'page' : undefined}
            >
              <span class="thread-title">{titleOf(thread)}</span>
              <small>
                {thread.messageCount} messages · {new Date(thread.updatedAt).toLocaleString()}
              </small>
            </a>
            <button
              type="button"
              class="icon"
              aria-label={`Delete thread ${titleOf(thread)}`}
              onClick={() => remove(thread)}
            >
              ✕
            </button>
          </li>
        ))}
        {threads.length === 0 && <li class="empty">{search ? 'No thread matches.' : 'No threads yet.'}</li>}
      </ul>
    </nav>
  );
}

/** Every thread (or every match of `search`), following cursors (at most 10 pages). */
async function listAll(api: Api, search: string): Promise<ThreadRecord[]> {
  const threads: ThreadRecord[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 10; page++) {
    const query = new URLSearchParams({ limit: '100' });
    if (search) query.set('search', search);
    if (cursor) query.set('cursor', cursor);
    const answer: { threads: ThreadRecord[]; nextCursor: string | null } = await api.json(
      `/threads?${query}`,
    );
    threads.push(...answer.threads);
    cursor = answer.nextCursor;
    if (!cursor) break;
  }
  return threads;
}
