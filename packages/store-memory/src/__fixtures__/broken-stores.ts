/** Deliberate bugs, one per entry, that the store conformance suite must catch (see `conformance-suite.test.ts`). */
import type { CheckpointCommit, ListThreadsOptions, RunRecord } from '@lunation/contract';
import type { MemoryStore } from '../memory-store.js';

/** Breaks one behaviour of a store in place. */
type Breakage = (store: MemoryStore) => void;

/** Each entry breaks one rule of the contract. */
export const breakages: Record<string, Breakage> = {
  'ignores expectedMessageCount': (store) => {
    const commit = store.commit.bind(store);
    store.commit = async (input: CheckpointCommit) => {
      const thread = await store.getThread(input.threadId);
      return commit({ ...input, expectedMessageCount: thread?.messageCount ?? 0 });
    };
  },
  'writes the run before checking for conflicts': (store) => {
    const commit = store.commit.bind(store);
    store.commit = async (input: CheckpointCommit) => {
      const thread = await store.getThread(input.threadId);
      if (input.run !== undefined && thread !== undefined) {
        await commit({
          threadId: input.threadId,
          expectedMessageCount: thread.messageCount,
          messages: [],
          run: input.run,
        });
      }
      return commit(input);
    };
  },
  'ignores lease tokens on commit': (store) => {
    const commit = store.commit.bind(store);
    store.commit = async ({ leaseToken: _ignored, ...input }: CheckpointCommit) => commit(input);
  },
  'accepts a commit without a token while the thread is leased': (store) => {
    const commit = store.commit.bind(store);
    store.commit = async (input: CheckpointCommit) => {
      const lease = input.leaseToken === undefined ? await store.getLease(input.threadId) : undefined;
      return commit(lease === undefined ? input : { ...input, leaseToken: lease.token });
    };
  },
  'accepts lease tokens that were never issued': (store) => {
    const commit = store.commit.bind(store);
    store.commit = async ({ leaseToken, ...input }: CheckpointCommit) => {
      const latest = store.backend.leases.get(input.threadId)?.highestToken ?? 0;
      if (leaseToken === undefined || leaseToken <= latest) {
        return commit(leaseToken === undefined ? input : { ...input, leaseToken });
      }
      return commit(latest === 0 ? input : { ...input, leaseToken: latest });
    };
  },
  'stores messages without checking their role and content': (store) => {
    const commit = store.commit.bind(store);
    store.commit = async (input: CheckpointCommit) =>
      commit({
        ...input,
        messages: input.messages.map((message) =>
          typeof message === 'object' && message !== null
            ? {
                ...message,
                role: (['system', 'user', 'assistant', 'tool'] as unknown[]).includes(message.role)
                  ? message.role
                  : 'user',
                content: Array.isArray(message.content) ? message.content : [],
              }
            : { id: 'replaced', role: 'user', content: [] },
        ) as CheckpointCommit['messages'],
      });
  },
  'takes the latest run by insertion, not createdAt': (store) => {
    const inserted = new Map<string, string[]>();
    const commit = store.commit.bind(store);
    store.commit = async (input: CheckpointCommit) => {
      const result = await commit(input);
      if (input.run !== undefined) {
        inserted.set(input.threadId, [...(inserted.get(input.threadId) ?? []), input.run.identity.runId]);
      }
      return result;
    };
    store.getLatestRun = async (threadId: string): Promise<RunRecord | undefined> => {
      const runId = inserted.get(threadId)?.at(-1);
      return runId === undefined ? undefined : store.getRun(runId);
    };
  },
  'gives a cursor whenever a page is full': (store) => {
    const listThreads = store.listThreads.bind(store);
    store.listThreads = async (options: ListThreadsOptions = {}) => {
      const page = await listThreads(options);
      if (page.nextCursor !== undefined || page.items.length !== (options.limit ?? 50)) return page;
      const last = page.items.at(-1)!;
      const cursor = (await listThreads({ ...options, limit: 1, cursor: undefined })).nextCursor;
      return { items: page.items, nextCursor: cursor === undefined ? last.id : cursor };
    };
  },
  'pages threads by offset': (store) => {
    const listThreads = store.listThreads.bind(store);
    store.listThreads = async (options: ListThreadsOptions = {}) => {
      const all = (await listThreads({ resourceId: options.resourceId, limit: 1_000_000 })).items;
      const start = options.cursor === undefined ? 0 : Number(options.cursor);
      const end = start + (options.limit ?? 50);
      const items = all.slice(start, end);
      return end < all.length ? { items, nextCursor: String(end) } : { items };
    };
  },
  'forgets the token counter on release': (store) => {
    const releaseLease = store.releaseLease.bind(store);
    store.releaseLease = async (input) => {
      const released = await releaseLease(input);
      if (released) store.backend.leases.delete(input.threadId);
      return released;
    };
  },
  'renews any lease': (store) => {
    store.renewLease = async (input) => {
      const slot = store.backend.leases.get(input.threadId);
      if (slot?.lease === undefined) throw new Error(`no lease on ${input.threadId}`);
      slot.lease = { ...slot.lease, expiresAt: Date.now() + input.ttlMs };
      return { ...slot.lease };
    };
  },
  'lets any incarnation of an owner take its lease over (the same-owner double run)': (store) => {
    const acquireLease = store.acquireLease.bind(store);
    store.acquireLease = async (input) => {
      const held = store.backend.leases.get(input.threadId)?.lease;
      if (held?.owner === input.owner && held.incarnation !== undefined && input.incarnation !== undefined) {
        await store.releaseLease({ threadId: input.threadId, token: held.token });
      }
      return acquireLease(input);
    };
  },
  'does not record renewals in renewedAt': (store) => {
    const renewLease = store.renewLease.bind(store);
    store.renewLease = async (input) => {
      const before = store.backend.leases.get(input.threadId)?.lease?.renewedAt;
      const renewed = await renewLease(input);
      const slot = store.backend.leases.get(input.threadId);
      if (before !== undefined && slot?.lease !== undefined) slot.lease.renewedAt = before;
      return before === undefined ? renewed : { ...renewed, renewedAt: before };
    };
  },
  'reports thread-busy without details': (store) => {
    const acquireLease = store.acquireLease.bind(store);
    store.acquireLease = async (input) => {
      try {
        return await acquireLease(input);
      } catch (error) {
        Object.assign(error as object, { details: {} });
        throw error;
      }
    };
  },
  'returns its own thread-state objects': (store) => {
    const cache = new Map<string, Record<string, unknown>>();
    const getThreadState = store.getThreadState.bind(store);
    store.getThreadState = async (threadId: string) => {
      const state = cache.get(threadId) ?? (await getThreadState(threadId));
      cache.set(threadId, state);
      return state;
    };
  },
  'keeps ledger entries of deleted threads': (store) => {
    const deleteThread = store.deleteThread.bind(store);
    store.deleteThread = async (threadId: string) => {
      const ledger = [...store.backend.ledger].map(([runId, entries]) => [runId, new Map(entries)] as const);
      const deleted = await deleteThread(threadId);
      for (const [runId, entries] of ledger) store.backend.ledger.set(runId, entries);
      return deleted;
    };
  },
  'never counts another attempt': (store) => {
    const beginToolExecution = store.beginToolExecution.bind(store);
    store.beginToolExecution = async (input) =>
      (await store.getToolExecution(input.runId, input.toolCallId)) ?? beginToolExecution(input);
  },
};
