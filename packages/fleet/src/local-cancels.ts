import type { CancelRequest, CancelRequestInput, CancelWatch, IdSource } from '@lunation/contract';

/** A watch of one thread's cancel requests. */
class Watch implements CancelWatch {
  private readonly seen = new Set<string>();
  closed = false;

  constructor(
    private readonly cancels: LocalCancels,
    readonly threadId: string,
    private readonly listener: (request: CancelRequest) => void,
  ) {}

  deliver(request: CancelRequest): void {
    if (this.closed || this.seen.has(request.id)) return;
    this.seen.add(request.id);
    try {
      this.listener(request);
    } catch {
      // A listener must not throw; one that does must not stop the other watchers.
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cancels.unwatch(this);
  }
}

/** The cancel requests of a local dispatch backend (per thread, one per run named) and their watchers. */
export class LocalCancels {
  /** Thread id → run id (`''`: none named) → request; a map keeps insertion order, oldest first. */
  private readonly requests = new Map<string, Map<string, CancelRequest>>();
  private readonly watches = new Map<string, Set<Watch>>();

  /** `ids` names the requests. */
  constructor(private readonly ids: IdSource) {}

  request(input: CancelRequestInput, now: number): CancelRequest {
    const request: CancelRequest = {
      id: this.ids.id(),
      threadId: input.threadId,
      ...(input.runId === undefined ? {} : { runId: input.runId }),
      reason: input.reason,
      requestedAt: now,
    };
    let thread = this.requests.get(input.threadId);
    if (thread === undefined) {
      thread = new Map();
      this.requests.set(input.threadId, thread);
    }
    const key = input.runId ?? '';
    thread.delete(key); // the newer request for the run is the newest of the thread
    thread.set(key, request);
    for (const watch of this.watches.get(input.threadId) ?? []) watch.deliver(request);
    return request;
  }

  list(threadId: string): CancelRequest[] {
    return [...(this.requests.get(threadId)?.values() ?? [])];
  }

  /** Starts a watch; a request already there is delivered at once. */
  watch(threadId: string, listener: (request: CancelRequest) => void): Watch {
    const watch = new Watch(this, threadId, listener);
    let set = this.watches.get(threadId);
    if (set === undefined) {
      set = new Set();
      this.watches.set(threadId, set);
    }
    set.add(watch);
    for (const existing of this.list(threadId)) watch.deliver(existing);
    return watch;
  }

  unwatch(watch: Watch): void {
    const set = this.watches.get(watch.threadId);
    if (set?.delete(watch) && set.size === 0) this.watches.delete(watch.threadId);
  }

  clear(threadId: string, requestId: string | undefined): boolean {
    const thread = this.requests.get(threadId);
    if (thread === undefined) return false;
    if (requestId === undefined) return this.requests.delete(threadId);
    for (const [key, request] of thread) {
      if (request.id !== requestId) continue;
      thread.delete(key);
      if (thread.size === 0) this.requests.delete(threadId);
      return true;
    }
    return false;
  }
}
