import type { AgentEvent } from '@lunation/contract';

/**
 * The events of one run as an AsyncIterable. Events are buffered, so a slow or late consumer loses nothing;
 * every iterator replays the run's events from the start.
 */
export class EventStream implements AsyncIterable<AgentEvent> {
  private readonly events: AgentEvent[] = [];
  private closed = false;
  private waiters: Array<() => void> = [];

  /** @internal */
  push(event: AgentEvent): void {
    this.events.push(event);
    if (this.waiters.length > 0) this.wake();
  }

  /** @internal */
  close(): void {
    this.closed = true;
    this.wake();
  }

  /** Events emitted so far. */
  get buffered(): readonly AgentEvent[] {
    return this.events;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  /**
   * Every event from the start, then new ones as they come, until the run ends. (A plain iterator, not an
   * async generator: a buffered event costs one resolved promise, nothing more.)
   */
  [Symbol.asyncIterator](): AsyncIterator<AgentEvent> {
    let index = 0;
    let stopped = false;
    const next = (): Promise<IteratorResult<AgentEvent>> => {
      if (!stopped && index < this.events.length) {
        return Promise.resolve({ value: this.events[index++] as AgentEvent, done: false });
      }
      if (stopped || this.closed) return Promise.resolve({ value: undefined, done: true });
      return new Promise<void>((resolve) => this.waiters.push(resolve)).then(next);
    };
    return {
      next,
      return: () => {
        stopped = true;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
