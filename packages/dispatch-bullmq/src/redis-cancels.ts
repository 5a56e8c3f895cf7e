import type { CancelRequest, CancelRequestInput, CancelWatch } from '@lunation/contract';
import type { Redis } from 'ioredis';
import type { DispatchContext } from './dispatch-context.js';
import { dispatchScripts } from './dispatch-scripts.js';

/** A watch of one thread's cancel requests: told once per request id. */
class Watch implements CancelWatch {
  private readonly seen = new Set<string>();
  closed = false;

  constructor(
    readonly threadId: string,
    private readonly listener: (request: CancelRequest) => void,
    private readonly onClose: (watch: Watch) => void,
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
    this.onClose(this);
  }
}

/**
 * Cancel requests in Redis: a hash per thread, one field per run named (`r:<runId>`, `r:` for none) holding the
 * request's JSON, published on one channel as they are made. (A hash of the earlier layout, one request in
 * fields `id` and `request`, is read as that request and cleared by its id.)
 * Watchers share one subscriber connection; after it reconnects they re-read their threads' requests, so none
 * is missed while it was down.
 */
export class RedisCancels {
  private readonly watches = new Map<string, Set<Watch>>();
  private subscriber: Promise<Redis> | undefined;
  private closed = false;

  constructor(private readonly context: DispatchContext) {}

  async request(input: CancelRequestInput): Promise<CancelRequest> {
    const request: CancelRequest = {
      id: this.context.ids.id(),
      threadId: input.threadId,
      ...(input.runId === undefined ? {} : { runId: input.runId }),
      reason: input.reason,
      requestedAt: this.context.clock.now(),
    };
    const json = JSON.stringify(request);
    const { client, keys } = this.context;
    await client
      .multi()
      .hset(keys.cancel(input.threadId), `r:${input.runId ?? ''}`, json)
      .publish(keys.cancelChannel, json)
      .exec();
    return request;
  }

  /** The thread's requests, oldest first. */
  async list(threadId: string): Promise<CancelRequest[]> {
    const fields = await this.context.client.hgetall(this.context.keys.cancel(threadId));
    const requests: CancelRequest[] = [];
    for (const [field, json] of Object.entries(fields)) {
      if (field.startsWith('r:') || field === 'request') requests.push(JSON.parse(json) as CancelRequest);
    }
    return requests.sort((a, b) => a.requestedAt - b.requestedAt);
  }

  async watch(threadId: string, listener: (request: CancelRequest) => void): Promise<CancelWatch> {
    await this.subscribe();
    const watch = new Watch(threadId, listener, (closed) => {
      const set = this.watches.get(closed.threadId);
      if (set?.delete(closed) && set.size === 0) this.watches.delete(closed.threadId);
    });
    let set = this.watches.get(threadId);
    if (set === undefined) {
      set = new Set();
      this.watches.set(threadId, set);
    }
    set.add(watch);
    for (const existing of await this.list(threadId)) watch.deliver(existing);
    return watch;
  }

  async clear(threadId: string, requestId: string | undefined): Promise<boolean> {
    const cleared = await this.context.run(
      dispatchScripts.clearCancel,
      [this.context.keys.cancel(threadId)],
      [requestId ?? ''],
    );
    return cleared === 1;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const set of [...this.watches.values()]) for (const watch of [...set]) watch.close();
    const subscriber = await this.subscriber?.catch(() => undefined);
    subscriber?.disconnect();
  }

  /** Opens the shared subscriber connection once. */
  private subscribe(): Promise<Redis> {
    this.subscriber ??= (async () => {
      const subscriber = this.context.client.duplicate();
      subscriber.on('error', this.context.reportError);
      subscriber.on('message', (_channel: string, json: string) =>
        this.deliver(JSON.parse(json) as CancelRequest),
      );
      let connectedBefore = false;
      subscriber.on('ready', () => {
        if (connectedBefore) void this.recheck();
        connectedBefore = true;
      });
      try {
        await subscriber.subscribe(this.context.keys.cancelChannel);
      } catch (error) {
        // Unreachable now: the next watch tries again with a new connection.
        subscriber.disconnect();
        this.subscriber = undefined;
        throw error;
      }
      if (this.closed) subscriber.disconnect();
      return subscriber;
    })();
    return this.subscriber;
  }

  private deliver(request: CancelRequest): void {
    for (const watch of this.watches.get(request.threadId) ?? []) watch.deliver(request);
  }

  /** After a reconnect: requests published while the subscriber was away. */
  private async recheck(): Promise<void> {
    for (const threadId of [...this.watches.keys()]) {
      const requests = await this.list(threadId).catch(this.context.reportError);
      for (const request of requests ?? []) this.deliver(request);
    }
  }
}
