import type { AgentEvent } from '@lunation/contract';

/**
 * The events of one run as an AsyncIterable. Events are buffered, so a slow or late consumer loses nothing;
 * every iterator replays the run's events from the start.
 */
export class EventStream implements AsyncIterable<AgentEvent> {
  private readonly events: AgentEvent[] = [];
  private closed = false;
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

  /** @internal the result an iterator at `index` gets now: an event or the end; undefined while more may come */
  read(index: number): IteratorResult<AgentEvent> | undefined {
    if (index < this.events.length) return { value: this.events[index] as AgentEvent, done: false };
    return this.closed ? ended() : undefined;
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
  /** The `next()` that waits now, if any. */
  private pending: Promise<IteratorResult<AgentEvent>> | undefined;

  constructor(private readonly stream: EventStream) {}

  next(): Promise<IteratorResult<AgentEvent>> {
    // A next() called while another still waits answers after it, in order.
    if (this.pending !== undefined) return this.pending.then(() => this.next());
    const ready = this.take();
    if (ready !== undefined) return Promise.resolve(ready);
    this.pending = new Promise<IteratorResult<AgentEvent>>((resolve) => {
      this.resolve = resolve;
      this.stream.wait(this);
    });
    return this.pending;
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
    this.pending = undefined;
    resolve(this.take() ?? ended());
  }

  /** The next result at once: an event, or the end; undefined while the run may still emit. */
  private take(): IteratorResult<AgentEvent> | undefined {
    if (this.stopped) return ended();
    const result = this.stream.read(this.index);
    if (result !== undefined && result.done !== true) this.index++;
    return result;
  }
}

function ended(): IteratorReturnResult<undefined> {
  return { value: undefined, done: true };
}
