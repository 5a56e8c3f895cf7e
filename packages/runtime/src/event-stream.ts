import type { AgentEvent } from '@lunation/contract';

/**
 * The events of one run as an AsyncIterable. Events are buffered, so a slow or late consumer loses nothing;
 * every iterator replays the run's events from the start.
 */
export class EventStream implements AsyncIterable<AgentEvent> {
  /** @internal every event so far, in order */
  readonly events: AgentEvent[] = [];
  /** @internal whether the run ended (no more events) */
  closed = false;
  /** The iterator waiting for the next event (a run usually has one consumer: a field, no list). */
  private waiting: EventCursor | undefined;
  /** Further iterators waiting at the same time. */
  private alsoWaiting: EventCursor[] | undefined;

  /** @internal */
  push(event: AgentEvent): void {
    this.events.push(event);
    if (this.waiting !== undefined) this.wake();
  }

  /** @internal */
  close(): void {
    this.closed = true;
    if (this.waiting !== undefined) this.wake();
  }

  /** Events emitted so far. */
  get buffered(): readonly AgentEvent[] {
    return this.events;
  }

  /** @internal an iterator waits for the next event (or the end) */
  wait(cursor: EventCursor): void {
    if (this.waiting === undefined) this.waiting = cursor;
    else if (this.alsoWaiting === undefined) this.alsoWaiting = [cursor];
    else this.alsoWaiting.push(cursor);
  }

  private wake(): void {
    const first = this.waiting as EventCursor;
    const others = this.alsoWaiting;
    this.waiting = undefined;
    this.alsoWaiting = undefined;
    first.wake();
    if (others !== undefined) for (const cursor of others) cursor.wake();
  }

  /**
   * Every event from the start, then new ones as they come, until the run ends. A buffered event costs one
   * resolved promise; a wait, one pending promise resolved with the event itself.
   */
  [Symbol.asyncIterator](): AsyncIterator<AgentEvent> {
    return new EventCursor(this);
  }
}

/** One iterator over an EventStream: its position, and the promise its consumer waits on. */
class EventCursor implements AsyncIterator<AgentEvent> {
  private index = 0;
  private stopped = false;
  private resolve: ((result: IteratorResult<AgentEvent>) => void) | undefined;

  constructor(private readonly stream: EventStream) {}

  next(): Promise<IteratorResult<AgentEvent>> {
    const ready = this.take();
    if (ready !== undefined) return Promise.resolve(ready);
    return new Promise<IteratorResult<AgentEvent>>((resolve) => {
      this.resolve = resolve;
      this.stream.wait(this);
    });
  }

  return(): Promise<IteratorResult<AgentEvent>> {
    this.stopped = true;
    this.wake();
    return Promise.resolve(ended());
  }

  /** @internal an event came or the stream ended: a waiting `next()` resolves with it. */
  wake(): void {
    const resolve = this.resolve;
    if (resolve === undefined) return;
    this.resolve = undefined;
    resolve(this.take() ?? ended());
  }

  /** The next result at once: an event, or the end; undefined while the run may still emit. */
  private take(): IteratorResult<AgentEvent> | undefined {
    if (this.stopped) return ended();
    const { events } = this.stream;
    if (this.index < events.length) return { value: events[this.index++] as AgentEvent, done: false };
    return this.stream.closed ? ended() : undefined;
  }
}

function ended(): IteratorReturnResult<undefined> {
  return { value: undefined, done: true };
}
