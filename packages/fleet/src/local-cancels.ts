import type { CancelRequest, CancelRequestInput, CancelWatch } from '@lunation/contract';
import { createId } from '@lunation/runtime/executor';

/** A watch of one thread's cancel requests. */
class Watch implements CancelWatch {
  lastId: string | undefined;
  closed = false;

  constructor(
    private readonly cancels: LocalCancels,
    readonly threadId: string,
    private readonly listener: (request: CancelRequest) => void,
  ) {}

  deliver(request: CancelRequest): void {
    if (this.closed || request.id === this.lastId) return;
    this.lastId = request.id;
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

/** The cancel requests of a local dispatch backend and their watchers. */
export class LocalCancels {
  private readonly requests = new Map<string, CancelRequest>();
  private readonly watches = new Map<string, Set<Watch>>();

  request(input: CancelRequestInput, now: number): CancelRequest {
    const request: CancelRequest = {
      id: createId(),
      threadId: input.threadId,
      ...(input.runId === undefined ? {} : { runId: input.runId }),
      reason: input.reason,
      requestedAt: now,
    };
    this.requests.set(input.threadId, request);
    for (const watch of this.watches.get(input.threadId) ?? []) watch.deliver(request);
    return request;
  }

  get(threadId: string): CancelRequest | undefined {
    return this.requests.get(threadId);
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
    const existing = this.requests.get(threadId);
    if (existing !== undefined) watch.deliver(existing);
    return watch;
  }

  unwatch(watch: Watch): void {
    const set = this.watches.get(watch.threadId);
    if (set?.delete(watch) && set.size === 0) this.watches.delete(watch.threadId);
  }

  clear(threadId: string, requestId: string | undefined): boolean {
    const request = this.requests.get(threadId);
    if (request === undefined || (requestId !== undefined && request.id !== requestId)) return false;
    this.requests.delete(threadId);
    return true;
  }
}
