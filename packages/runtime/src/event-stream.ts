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

  /** Every event from the start, then new ones as they come, until the run ends. */
  async *[Symbol.asyncIterator](): AsyncIterator<AgentEvent> {
    let index = 0;
    while (true) {
      while (index < this.events.length) yield this.events[index++] as AgentEvent;
      if (this.closed) return;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}
